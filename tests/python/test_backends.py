"""A drop-in op in every PyTensor backend: Numba in nopython mode (also under Blockwise), JAX
with gradients and vmap, and a clear error in the backends that cannot call C (PyTorch, MLX).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
numba = pytest.importorskip("numba")
import pytensor.tensor as pt
from backend_ops import VecMul, VecMulNoShape, VecMulWithPerform
from examples import EXAMPLES

from libsection import _backends
from libsection.pytensor import pytensor_op

HERE = Path(__file__).resolve().parent


def nopython_function(inputs, outputs, **kwargs):
    """pytensor.function in NUMBA mode, failing on PyTensor's object-mode notice."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*", category=UserWarning)
        return pytensor.function(inputs, outputs, mode="NUMBA", **kwargs)


def native_ir(node_fn, *args):
    """The LLVM IR of a node's Numba function, compiled through a caller as PyTensor does."""
    caller = numba.njit(lambda *a: node_fn(*a))
    caller(*args)
    assert caller.nopython_signatures, "the caller did not compile in nopython mode"
    assert node_fn.nopython_signatures
    return "\n".join(node_fn.inspect_llvm().values())


# ---------------------------------------------------------------- Numba


def test_numba_calls_the_c_code_natively_without_object_mode(cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    node = VecMul()(x, y).owner
    from pytensor.link.numba.dispatch.basic import numba_funcify

    fn = numba_funcify(node.op, node)
    a, b = np.arange(3.0), np.arange(3.0) + 1
    ir = native_ir(fn, a, b)
    # An objmode block loads a cached dispatcher and calls Python through
    # PyObject_CallFunctionObjArgs; the native call goes through libsection's entry point only.
    assert "cached_objmode_dispatcher" not in ir
    assert "PyObject_CallFunctionObjArgs" not in ir
    assert "numba.dynamic.globals" in ir  # the instance and the entry, by address
    assert fn.nopython_signatures
    np.testing.assert_array_equal(nopython_function([x, y], VecMul()(x, y))(a, b), a * b)


def test_numba_under_blockwise_loops_over_the_c_call_without_object_mode(cache_dir):
    x, y = pt.dmatrix("x"), pt.dmatrix("y")
    out = pt.vectorize(VecMul(), signature="(n),(n)->(n)")(x, y)
    f = nopython_function([x, y], out)
    a, b = np.random.default_rng(0).normal(size=(2, 4, 3))
    np.testing.assert_array_equal(f(a, b), a * b)


def test_numba_raises_the_c_codes_error(cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    f = nopython_function([x, y], VecMul()(x, y))
    with pytest.raises(ValueError, match=r"vec_mul: lengths differ \(3 and 2\)"):
        f(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(f(np.ones(2), np.ones(2)), np.ones(2))  # still usable


def test_numba_keeps_no_output_the_caller_holds(cache_dir):
    # The op reuses its output's memory when the caller dropped it, never when it is held.
    x, y = pt.dvector("x"), pt.dvector("y")
    f = nopython_function([x, y], VecMul()(x, y))
    first = f(np.ones(3), np.ones(3))
    second = f(np.full(3, 2.0), np.ones(3))
    np.testing.assert_array_equal(first, np.ones(3))
    np.testing.assert_array_equal(second, np.full(3, 2.0))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.folder)
def test_numba_runs_every_bridged_example_natively(example, cache_dir):
    # Scalars (vector_times_scalar), two outputs (sum_and_difference), params (scale_shift).
    values = example.inputs()
    variables = [
        pt.tensor(dtype=v.dtype.name, shape=(None,) * v.ndim)
        if isinstance(v, np.ndarray)
        else pt.dscalar()
        for v in values
    ]
    op = pytensor_op(example.op())
    f = nopython_function(variables, op(*variables))
    expected = example.expected(*values)
    result = f(*values)
    if not isinstance(expected, tuple):
        result, expected = [result], [expected]
    for r, e in zip(result, expected, strict=True):
        np.testing.assert_allclose(r, e, rtol=1e-12)
    node = op(*variables)
    node = (node[0] if isinstance(node, list) else node).owner
    from pytensor.link.numba.dispatch.basic import numba_funcify

    ir = native_ir(
        numba_funcify(node.op, node),
        *[np.asarray(v) if isinstance(v, np.ndarray) else float(v) for v in values],
    )
    assert "cached_objmode_dispatcher" not in ir


class WrongNdim(VecMulNoShape):
    """Declares a matrix output; its C code returns a vector."""

    def make_node(self, x, y):
        from pytensor.graph.basic import Apply

        return Apply(self, [pt.as_tensor_variable(x), pt.as_tensor_variable(y)], [pt.dmatrix()])


def test_numba_refuses_an_output_unlike_the_declared_type(cache_dir):
    # Numba's unboxing would write a 1-d array's shape into a 2-d array struct unchecked.
    x, y = pt.dvector("x"), pt.dvector("y")
    f = nopython_function([x, y], WrongNdim()(x, y))
    with pytest.raises(TypeError, match="WrongNdim: output 0 is not a 2-d float64 array"):
        f(np.ones(3), np.ones(3))


def test_numba_runs_an_own_perform_without_an_object_mode_block(cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    VecMulWithPerform.performed = 0
    f = nopython_function([x, y], VecMulWithPerform()(x, y))
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 3.0)), np.full(2, 3.0))
    assert VecMulWithPerform.performed == 1


def test_numba_frees_the_node_state_with_the_function(cache_dir):
    # Numba keeps every intrinsic for good: the node's state must not hang on one.
    import gc

    from libsection._node import NodeRunner

    def runners():
        gc.collect()
        return sum(type(o) is NodeRunner for o in gc.get_objects())

    x, y = pt.dvector("x"), pt.dvector("y")
    before = runners()
    f = nopython_function([x, y], VecMulWithPerform()(x, y))
    f(np.ones(2), np.ones(2))
    assert runners() == before + 1
    del f
    assert runners() == before


@pytest.mark.parametrize("mode", ["CVM", "NUMBA"])
def test_the_recursive_filter_op_equals_its_scan_twin_with_its_gradient(mode, cache_dir):
    # The benchmark's "C beats the built-ins" model (bench/bench_samplers.py) is only a fair
    # comparison if both compute the same log-likelihood and gradient.
    from backend_ops import SmoothLogLike, smooth_loglike_scan

    y = np.cumsum(np.random.default_rng(0).normal(size=200))
    alpha = pt.dscalar("alpha")
    outputs = []
    for logp in (SmoothLogLike()(y, alpha), smooth_loglike_scan(y, alpha)):
        outputs += [logp, pytensor.grad(logp, alpha)]
    fn = pytensor.function([alpha], outputs, mode=mode)
    for a in (0.1, 0.5, 0.93):
        op_logp, op_grad, scan_logp, scan_grad = fn(a)
        np.testing.assert_allclose(op_logp, scan_logp, rtol=1e-12)
        np.testing.assert_allclose(op_grad, scan_grad, rtol=1e-9)
        assert op_grad != 0


def test_numba_works_in_a_second_process_with_pytensors_cache(tmp_path):
    # The compiled function embeds addresses of this process: it must never be cached on disk
    # and reloaded elsewhere. Two processes share one PyTensor compiledir.
    script = textwrap.dedent(f"""
        import json, sys, warnings
        sys.path.insert(0, {str(HERE)!r})
        warnings.filterwarnings("error", message=".*object mode.*", category=UserWarning)
        import numpy as np, pytensor, pytensor.tensor as pt
        from backend_ops import VecMul
        x, y = pt.dvector("x"), pt.dvector("y")
        f = pytensor.function([x, y], VecMul()(x, y) + 1, mode="NUMBA")
        print(json.dumps(f(np.arange(3.0), np.arange(3.0)).tolist()))
    """)
    env = dict(
        os.environ,
        PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pt'},numba__cache=True",
        LIBSECTION_CACHE_DIR=str(tmp_path / "ls"),
    )
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
        )
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout.strip().splitlines()[-1]) == [1.0, 2.0, 5.0]


# ---------------------------------------------------------------- other backends


def test_backends_register_when_pytensor_imports_them(tmp_path, monkeypatch):
    (tmp_path / "fake_dispatch.py").write_text(
        "from functools import singledispatch\n"
        "@singledispatch\n"
        "def pytorch_funcify(op, node=None, **kwargs):\n"
        "    raise NotImplementedError('no conversion')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = _backends.Backend(
        "PyTorch", "fake_dispatch", "pytorch_funcify", _backends.refusal("PyTorch")
    )
    _backends.register(VecMul, lambda op: False, backends=[fake])
    import fake_dispatch

    with pytest.raises(NotImplementedError) as error:
        fake_dispatch.pytorch_funcify(VecMul())
    message = str(error.value)
    assert "PyTorch backend cannot call" in message
    for mode in ("CVM", "NUMBA", "JAX", "FAST_COMPILE"):
        assert mode in message
    sys.modules.pop("fake_dispatch")


@pytest.mark.parametrize("backend", ["PYTORCH", "MLX"])
def test_pytorch_and_mlx_name_the_modes_that_run_the_op(backend, cache_dir):
    module = {"PYTORCH": "torch", "MLX": "mlx.core"}[backend]
    pytest.importorskip(module)
    x, y = pt.dvector("x"), pt.dvector("y")
    with pytest.raises(NotImplementedError, match="cannot call C code|Compile this function"):
        pytensor.function([x, y], VecMul()(x, y), mode=backend)


# ---------------------------------------------------------------- JAX


@pytest.fixture
def jax():
    return pytest.importorskip("jax")  # the py312 stack pins it


def jax_function(inputs, outputs):
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    fgraph = FunctionGraph(inputs, outputs, clone=True)
    get_mode("JAX").optimizer(fgraph)
    fn = jax_funcify(fgraph)
    return lambda *a: fn(*a)[0] if len(outputs) == 1 else fn(*a)


def test_jax_mode_runs_the_op(jax, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    f = pytensor.function([x, y], VecMul()(x, y) * 2, mode="JAX")
    a, b = np.arange(3.0), np.arange(3.0) + 1
    np.testing.assert_array_equal(f(a, b), 2 * a * b)


def test_jax_grad_matches_finite_differences(jax, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = jax_function([x, y], [(VecMul()(x, y) ** 2).sum()])
    a, b = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -3.0])
    gx, gy = jax.jit(jax.grad(fn, argnums=(0, 1)))(a, b)
    eps = 1e-6
    for g, which in ((gx, 0), (gy, 1)):
        numeric = []
        for i in range(3):
            step = np.zeros(3)
            step[i] = eps
            args_plus = [a + step, b] if which == 0 else [a, b + step]
            args_minus = [a - step, b] if which == 0 else [a, b - step]
            numeric.append((float(fn(*args_plus)) - float(fn(*args_minus))) / (2 * eps))
        np.testing.assert_allclose(np.asarray(g), numeric, rtol=1e-6, atol=1e-8)


def test_jax_vmap_matches_a_numpy_loop(jax, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = jax_function([x, y], [VecMul()(x, y)])
    a = np.random.default_rng(1).normal(size=(5, 4))
    b = np.random.default_rng(2).normal(size=4)
    out = jax.jit(jax.vmap(fn, in_axes=(0, None)))(a, b)
    np.testing.assert_array_equal(np.asarray(out), np.stack([row * b for row in a]))
    # Nested vmap and the gradient of a vmapped sum.
    nested = jax.vmap(jax.vmap(fn, in_axes=(0, None)), in_axes=(0, None))(a.reshape(5, 1, 4), b)
    np.testing.assert_array_equal(np.asarray(nested), (a * b).reshape(5, 1, 4))
    grad = jax.grad(lambda a: jax.vmap(fn, in_axes=(0, None))(a, b).sum())(a)
    np.testing.assert_array_equal(np.asarray(grad), np.broadcast_to(b, a.shape))


def test_jax_vmap_over_0d_inputs(jax, cache_dir):
    # Batch elements of a 0-d input reach the C code as 0-d arrays, not NumPy scalars.
    from backend_ops import GaussLogLike

    y, mu = pt.dvector("y"), pt.dscalar("mu")
    fn = jax_function([y, mu], [GaussLogLike()(y, mu)])
    data, mus = np.array([0.5, 1.0, 2.0]), np.array([0.0, 1.0, -1.0, 3.0])
    out = jax.jit(jax.vmap(fn, in_axes=(None, 0)))(data, mus)
    np.testing.assert_allclose(np.asarray(out), [-0.5 * ((data - m) ** 2).sum() for m in mus])
    grads = jax.vmap(jax.grad(fn, argnums=1), in_axes=(None, 0))(data, mus)
    np.testing.assert_allclose(np.asarray(grads), [(data - m).sum() for m in mus])


def test_jax_jit_traces_once_and_caches(jax, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = jax_function([x, y], [VecMul()(x, y)])
    traces = []

    @jax.jit
    def f(a, b):
        traces.append(1)
        return fn(a, b)

    for k in range(3):
        np.testing.assert_array_equal(np.asarray(f(np.full(3, k * 1.0), np.ones(3))), np.full(3, k))
    assert len(traces) == 1


def test_jax_asks_for_infer_shape(jax, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    with pytest.raises(NotImplementedError, match="define infer_shape.*on VecMulNoShape"):
        pytensor.function([x, y], VecMulNoShape()(x, y), mode="JAX")


def test_jax_runs_an_own_perform(jax, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    VecMulWithPerform.performed = 0
    f = pytensor.function([x, y], VecMulWithPerform()(x, y), mode="JAX")
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 3.0)), np.full(2, 3.0))
    assert VecMulWithPerform.performed == 1
