"""Batches in one C loop: every batched path against a loop of single calls of the same op, in
every backend (standalone, CVM, FAST_COMPILE, NUMBA, JAX), with broadcast batch dimensions,
empty and non-contiguous batches, a failing row (named, nothing half-written handed out), ops
that declare their C code takes the batch (``vmap_method = "broadcast_all"``), and the
batched node being what runs (``vectorize_graph``, ``pt.vectorize``, ``Blockwise``, gradients,
``jax.vmap``, PyMC's ``vectorize_over_posterior``)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from batched_ops import OwnOutput, OwnOutputUnnamed, PlusNdim, PlusNdimWhole, PlusPrevious
from examples import load_op_module

from libsection import _batched, _core

rng = np.random.default_rng(37)


def vtv():
    return load_op_module("vector_times_vector").VectorTimesVector()


def checked_log():
    return load_op_module("checked_log").CheckedLog()


def loop_of_single_calls(single, signature, inputs, out_core_shapes):
    """What a batch must equal: ``single`` called on each row, the rows in NumPy's broadcast
    order; ``out_core_shapes`` sizes the outputs of an empty batch."""
    core_in, _ = _batched.parse_signature(signature)
    arrays = [np.asarray(a) for a in inputs]
    batch = np.broadcast_shapes(*(a.shape[: a.ndim - len(d)] for a, d in zip(arrays, core_in)))
    rows = [np.broadcast_to(a, batch + a.shape[a.ndim - len(d) :]) for a, d in zip(arrays, core_in)]
    outputs = [np.empty(batch + tuple(s)) for s in out_core_shapes]
    for index in np.ndindex(*batch):
        results = single(*(r[index] for r in rows))
        for out, result in zip(outputs, results if isinstance(results, tuple) else (results,)):
            out[index] = result
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


# ---------------------------------------------------------------- standalone


BATCHES = {
    "rows": lambda: (rng.random((5, 3)), rng.random((5, 3))),
    "broadcast": lambda: (rng.random((4, 1, 3)), rng.random((5, 3))),
    "one input unbatched": lambda: (rng.random((5, 3)), rng.random(3)),
    "non-contiguous": lambda: (rng.random((10, 3, 2))[::3, :, 1], rng.random((4, 6))[:, ::2]),
    "transposed batch": lambda: (rng.random((3, 5, 4)).transpose(1, 2, 0), rng.random(3)),
    "empty": lambda: (np.empty((0, 3)), rng.random(3)),
    "empty inside": lambda: (np.empty((2, 0, 3)), rng.random((1, 3))),
}


@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_standalone_batch_equals_a_loop_of_single_calls(batch, cache_dir):
    op = vtv()
    a, b = BATCHES[batch]()
    out = op(a, b)
    expected = loop_of_single_calls(op, op.gufunc_signature, (a, b), [(3,)])
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)
    assert out.flags.c_contiguous and out.flags.owndata


def test_standalone_scalar_rows_and_params(cache_dir):
    times_scalar = load_op_module("vector_times_scalar").VectorTimesScalar()
    x, a = rng.random((4, 6, 3)), rng.random(6)
    expected = loop_of_single_calls(times_scalar, "(n),()->(n)", (x, a), [(3,)])
    np.testing.assert_array_equal(times_scalar(x, a), expected)
    scale_shift = load_op_module("scale_shift").ScaleShift(2.0, -1.0)
    x = rng.random((2, 3, 5))
    np.testing.assert_array_equal(
        scale_shift(x), loop_of_single_calls(scale_shift, "(n)->(n)", (x,), [(5,)])
    )
    ode = load_op_module("ode_solve").OdeSolve(steps=50, dt=0.02)
    p, y0 = rng.random((3, 1, 3)), rng.random((4, 2))  # the signature's fixed lengths (3),(2)->(2)
    np.testing.assert_array_equal(
        ode(p, y0), loop_of_single_calls(ode, "(3),(2)->(2)", (p, y0), [(2,)])
    )
    with pytest.raises(ValueError, match=r"OdeSolve: input 1's core dimension 0 has length 3, "):
        ode(p, rng.random((4, 3)))


def test_a_failing_row_is_named_and_nothing_is_handed_out(cache_dir):
    op = checked_log()
    x = rng.random((2, 3, 4)) + 0.5
    good = op(x)
    bad = x.copy()
    bad[1, 2, 0] = -1.0
    with pytest.raises(ValueError) as error:
        op(bad)
    assert str(error.value) == (
        "CheckedLog: row 5 of the batch (index (1, 2)): checked_log: x[0] = -1 is not positive; "
        "log is undefined there"
    )
    np.testing.assert_array_equal(op(x), good)  # still usable, and the earlier result untouched
    np.testing.assert_array_equal(good, np.log(x))


def test_a_batch_runs_without_a_python_frame(cache_dir):
    op = vtv()
    a, b = rng.random((100, 3)), rng.random((100, 3))
    op(a, b)  # compiles, and the dispatcher keeps the batched call for these types
    frames = []

    def profile(frame, event, arg):
        if event == "call":
            frames.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        op(a, b)
    finally:
        sys.setprofile(None)
    assert frames == ["__call__"]  # the op's own, once: the dispatcher and the rows are C


def test_an_op_declaring_broadcast_all_gets_the_whole_batch(cache_dir):
    x = rng.random((4, 3))
    np.testing.assert_array_equal(PlusNdim()(x), x + 1)  # a row at a time: 1-d arrays
    np.testing.assert_array_equal(PlusNdimWhole()(x), x + 2)  # the batch at once: 2-d
    batch_times_batch = load_op_module("batch_times_batch").BatchTimesBatch()
    a, b = rng.random((4, 1, 3)), rng.random((5, 3))  # broadcast to (4, 5, 3) for the C code
    np.testing.assert_array_equal(batch_times_batch(a, b), a * b)
    np.testing.assert_array_equal(batch_times_batch(np.empty((0, 3)), b[0]), np.empty((0, 3)))


def test_an_op_keeping_its_input_sees_each_row_as_it_was(cache_dir):
    # The struct keeps the previous row's array: the batch gives it a new array for the next
    # row instead of moving the kept one on.
    x = rng.random((6, 4))
    out = PlusPrevious()(x)
    single = PlusPrevious().compiled("float64[:]")
    np.testing.assert_array_equal(out, np.stack([single(row) for row in x]))
    np.testing.assert_array_equal(out[1:], x[1:] + x[:-1])


def test_an_output_the_op_makes_is_copied_and_one_of_another_shape_refused(cache_dir):
    op = OwnOutput()
    x = rng.random((3, 4))
    np.testing.assert_array_equal(op(x), 2 * x)
    x[2, 0] = -1.0
    with pytest.raises(ValueError) as error:
        op(x)
    assert str(error.value) == (
        "OwnOutput: row 2 of the batch (index (2,)): output 0 has shape (5,), where the batch's "
        "output rows are (4,)"
    )


def test_an_output_shape_the_signature_does_not_give_is_the_first_rows(cache_dir):
    op = OwnOutputUnnamed()
    x = rng.random((3, 4))
    np.testing.assert_array_equal(op(x), 2 * x)
    x[0, 0] = -1.0  # the first row is one longer: the others are refused against it
    with pytest.raises(ValueError) as error:
        op(x)
    assert str(error.value) == (
        "OwnOutputUnnamed: row 1 of the batch (index (1,)): output 0 has shape (4,), where the "
        "batch's output rows are (5,)"
    )
    with pytest.raises(ValueError) as error:
        op(np.empty((0, 4)))
    assert str(error.value).startswith(
        "OwnOutputUnnamed: the batch is empty and output 0's core shape is not known without "
        "running the op (the signature "
    )


@pytest.mark.parametrize(
    ("inputs", "error", "message"),
    [
        (
            ((2, 3), (2, 4)),
            ValueError,
            r"VectorTimesVector: core dimension n is 3 in input 0 but 4 in input 1 "
            r"\(signature \(n\),\(n\)->\(n\)\)",
        ),
        (
            ((2, 3), (3, 3)),
            ValueError,
            r"VectorTimesVector: the batch dimensions \(3,\) of input 1 do not broadcast",
        ),
        (
            ((2, 3), ()),
            ValueError,
            r"VectorTimesVector: input 1 has 0 dimensions; its core dimensions in the "
            r"gufunc_signature '\(n\),\(n\)->\(n\)' need 1",
        ),
    ],
    ids=["core dimensions", "batch dimensions", "too few dimensions"],
)
def test_inputs_the_signature_refuses(inputs, error, message, cache_dir):
    with pytest.raises(error, match=message):
        vtv()(*(rng.random(s) for s in inputs))


def test_output_types_must_agree_with_the_signature(cache_dir):
    class Mismatched(PlusNdim):
        gufunc_signature = "(n)->(n,m)"

    with pytest.raises(ValueError, match=r"Mismatched.output_types gives output 0 1 dimensions"):
        Mismatched()(rng.random((2, 3)))


def test_batched_refuses_a_plan_it_could_misread(cache_dir):
    compiled = vtv().compiled("float64[:]", "float64[:]")
    with pytest.raises(ValueError, match="plan too short"):
        _core.Batched(compiled, [0, 1, 1, 0], ["op", "(n),(n)->(n)", "n"])
    with pytest.raises(ValueError, match="names a dimension it does not have"):
        _core.Batched(compiled, [0, 1, 1, 3, 0, 1, 0, 0, 1, 0], ["op", "sig", "n"])
    with pytest.raises(TypeError, match="takes a CompiledOp whose module has a batch entry"):
        _core.Batched(object(), [0, 0], ["op", "sig"])


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        ("(n)(n)->(n)", "at '\\(n\\)'"),
        ("(n)->", "no outputs"),
        ("(n-1)->(n)", "dimension 'n-1'"),
        ("(n)", "one '->'"),
    ],
)
def test_signatures_that_are_not_gufunc_signatures(signature, message):
    with pytest.raises(ValueError, match=f"not a gufunc signature: .*{message}"):
        _batched.parse_signature(signature)


def test_vmap_method_takes_two_values():
    class Odd(PlusNdim):
        vmap_method = "expand_dims"

    with pytest.raises(ValueError, match="Odd.vmap_method is 'expand_dims'; libsection takes"):
        _batched.vmap_method(Odd)


# ---------------------------------------------------------------- PyTensor

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt  # noqa: E402
from pytensor.graph.replace import vectorize_graph  # noqa: E402
from pytensor.tensor.blockwise import Blockwise  # noqa: E402

from libsection.pytensor import pytensor_op  # noqa: E402

MODES = ["CVM", "FAST_COMPILE", "NUMBA", "JAX"]


def needs(mode):
    if mode == "JAX":
        pytest.importorskip("jax", reason="JAX is not installed (the Python 3.12 stack has it)")
    if mode == "NUMBA":
        pytest.importorskip("numba")


def compiled(inputs, outputs, mode):
    """pytensor.function in ``mode``, and the names of its nodes' ops."""
    f = pytensor.function(inputs, outputs, mode=mode)
    return f, [type(n.op).__name__ for n in f.maker.fgraph.apply_nodes]


def vec_mul():
    from backend_ops import VecMul

    return VecMul()


@pytest.mark.parametrize("mode", MODES)
def test_vectorize_graph_runs_the_batched_node(mode, cache_dir):
    needs(mode)
    op = vec_mul()
    x, y = pt.dvector("x"), pt.dvector("y")
    X, Y = pt.tensor("X", shape=(None, 1, None)), pt.dmatrix("Y")
    f, ops = compiled([X, Y], vectorize_graph(op(x, y), {x: X, y: Y}), mode)
    assert "BatchedOp" in ops and "Blockwise" not in ops, ops
    single = pytensor.function([x, y], op(x, y), mode=mode)
    for a, b in [
        (rng.random((4, 1, 3)), rng.random((5, 3))),  # batch dimensions broadcast
        (rng.random((4, 1, 6))[::-1, :, ::2], rng.random((3, 5)).T),  # non-contiguous
        (np.empty((0, 1, 3)), rng.random((5, 3))),  # empty
    ]:
        expected = loop_of_single_calls(single, "(n),(n)->(n)", (a, b), [(3,)])
        out = f(a, b)
        assert out.shape == expected.shape
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("mode", ["CVM", "FAST_COMPILE", "NUMBA"])
def test_pt_vectorize_and_blockwise_run_the_batched_node(mode, cache_dir):
    needs(mode)
    X, Y = pt.dmatrix("X"), pt.dmatrix("Y")
    a, b = rng.random((6, 3)), rng.random((6, 3))
    for out in (
        pt.vectorize(vec_mul(), signature="(n),(n)->(n)")(X, Y),
        Blockwise(vec_mul(), signature="(n),(n)->(n)")(X, Y),
    ):
        f, ops = compiled([X, Y], out, mode)
        assert ops == ["BatchedOp"]
        np.testing.assert_array_equal(f(a, b), a * b)


@pytest.mark.parametrize("mode", ["CVM", "NUMBA"])
def test_runtime_broadcasting_is_refused_as_blockwise_refuses_it(mode, cache_dir):
    needs(mode)
    X, Y = pt.dmatrix("X"), pt.dmatrix("Y")
    f, _ = compiled([X, Y], pt.vectorize(vec_mul(), signature="(n),(n)->(n)")(X, Y), mode)
    with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
        f(rng.random((1, 3)), rng.random((5, 3)))


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_row_is_named_and_nothing_is_half_written(mode, cache_dir):
    needs(mode)
    op = pytensor_op(checked_log())
    X = pt.dmatrix("X")
    f, ops = compiled([X], pt.vectorize(op, signature="(n)->(n)")(X), mode)
    assert "BatchedOp" in ops
    x = rng.random((3, 4)) + 0.5
    good = f(x)
    kept = good.copy()
    bad = x.copy()
    bad[2, 1] = 0.0
    with pytest.raises(
        ValueError,
        match=r"CheckedLog: row 2 of the batch \(index \(2,\)\): "
        r"checked_log: x\[1\] = 0 is not positive",
    ):
        f(bad)
    np.testing.assert_array_equal(good, kept)  # what an earlier call handed out is untouched
    if mode == "CVM":  # the VM's storage holds no output of the failed call
        held = f.vm.storage_map[f.maker.fgraph.outputs[0]][0]
        assert held is None or np.array_equal(held, kept)
    np.testing.assert_array_equal(f(x), kept)


@pytest.mark.parametrize("mode", MODES)
def test_the_gradient_of_a_vectorized_graph_runs_batched_nodes(mode, cache_dir):
    needs(mode)
    op = vec_mul()
    x, y = pt.dvector("x"), pt.dvector("y")
    X, Y = pt.dmatrix("X"), pt.dmatrix("Y")
    out = vectorize_graph(op(x, y) ** 2, {x: X, y: Y})
    f, ops = compiled([X, Y], pytensor.grad(out.sum(), [X, Y]), mode)
    assert ops.count("BatchedOp") >= 2 and "Blockwise" not in ops, ops
    a, b = rng.random((5, 3)), rng.random((5, 3))
    ga, gb = f(a, b)
    np.testing.assert_allclose(ga, 2 * a * b * b, rtol=1e-14)
    np.testing.assert_allclose(gb, 2 * a * a * b, rtol=1e-14)


@pytest.mark.parametrize("mode", MODES)
def test_an_op_declaring_broadcast_all_gets_the_whole_batch_in_every_mode(mode, cache_dir):
    needs(mode)
    X = pt.dmatrix("X")
    x = rng.random((4, 3))
    for standalone, plus in ((PlusNdim(), 1), (PlusNdimWhole(), 2)):
        f, ops = compiled([X], pt.vectorize(pytensor_op(standalone), signature="(n)->(n)")(X), mode)
        assert "BatchedOp" in ops
        np.testing.assert_array_equal(f(x), x + plus)


def test_an_op_with_its_own_perform_keeps_blockwise(cache_dir):
    from backend_ops import VecMulWithPerform

    X, Y = pt.dmatrix("X"), pt.dmatrix("Y")
    _, ops = compiled(
        [X, Y], pt.vectorize(VecMulWithPerform(), signature="(n),(n)->(n)")(X, Y), "CVM"
    )
    assert ops == ["Blockwise"]


# ---------------------------------------------------------------- JAX


def jax_function(inputs, outputs):
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    fgraph = FunctionGraph(inputs, outputs, clone=True)
    get_mode("JAX").optimizer(fgraph)
    fn = jax_funcify(fgraph)
    return lambda *a: fn(*a)[0]


def test_jax_vmap_runs_the_batch_in_the_c_loop(cache_dir):
    jax = pytest.importorskip("jax", reason="JAX is not installed (the Python 3.12 stack has it)")
    x = pt.dvector("x")
    fn = jax_function([x], [pytensor_op(checked_log())(x)])
    a = rng.random((2, 3, 4)) + 0.5
    vmapped = jax.jit(jax.vmap(jax.vmap(fn)))
    np.testing.assert_allclose(np.asarray(vmapped(a)), np.log(a), rtol=1e-15)
    a[1, 2, 3] = -2.0
    # The row named: the handler ran the batch through the C loop, not a call per element.
    with pytest.raises(
        Exception,
        match=r"CheckedLog: row 5 of the batch \(index \(1, 2\)\): checked_log: x\[3\] = -2",
    ):
        np.asarray(vmapped(a))
    whole = jax.jit(jax.vmap(jax_function([x], [pytensor_op(PlusNdimWhole())(x)])))
    rows = rng.random((5, 4))
    np.testing.assert_array_equal(np.asarray(whole(rows)), rows + 2)  # one call: 2-d
    empty = jax.vmap(fn)(np.empty((0, 4)))
    assert empty.shape == (0, 4)


EXPORT_VMAPPED = """
import sys
import numpy as np, pytensor.tensor as pt
import jax
from batched_ops import PlusNdimWhole
from examples import load_op_module
from libsection import _jax_ffi
from libsection.pytensor import pytensor_op
from test_batched import jax_function
x = pt.dvector("x")
log = jax_function([x], [pytensor_op(load_op_module("checked_log").CheckedLog())(x)])
whole = jax_function([x], [pytensor_op(PlusNdimWhole())(x)])
program = lambda a, rows: (jax.vmap(jax.vmap(log))(a), jax.vmap(whole)(rows))
check = jax.export.DisabledSafetyCheck.custom_call(_jax_ffi.TARGET)
shapes = (jax.ShapeDtypeStruct((2, 3, 4), np.float64), jax.ShapeDtypeStruct((5, 4), np.float64))
exported = jax.export.export(jax.jit(program), disabled_checks=[check])(*shapes)
open(sys.argv[1], "wb").write(exported.serialize())
"""

RUN_VMAPPED = """
import json, sys
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import libsection  # registers libsection's XLA target: nothing else of the ops is imported
exported = jax.export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
a, rows = np.load(sys.argv[2]), np.load(sys.argv[3])
logs, plus = exported.call(a, rows)
results = {"log": np.asarray(logs).tolist(), "plus": np.asarray(plus).tolist()}
a[1, 2, 3] = -2.0
try:
    np.asarray(exported.call(a, rows)[0])
except Exception as e:
    results["error"] = str(e)
print(json.dumps(results))
"""


def run_script(code: str, tmp_path, args) -> dict:
    """Runs ``code`` with ``args`` in a fresh Python (tests/python and ops/ importable, its
    modules built in ``tmp_path``'s cache) and returns the JSON it prints last, if any."""
    import json
    import os
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parent
    ops = here.parent.parent / "ops"
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(here), str(ops), env.get("PYTHONPATH")]))
    env.pop("JAX_ENABLE_X64", None)
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=here,
        env=env,
        timeout=600,  # a hang guard
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def test_jax_vmap_of_an_exported_computation_batches_in_a_fresh_process(tmp_path):
    # The process that runs it builds each node's Batched from the call's attributes alone.
    pytest.importorskip("jax", reason="JAX is not installed (the Python 3.12 stack has it)")
    blob, a_file, rows_file = tmp_path / "vmapped.bin", tmp_path / "a.npy", tmp_path / "rows.npy"
    a, rows = rng.random((2, 3, 4)) + 0.5, rng.random((5, 4))
    np.save(a_file, a)
    np.save(rows_file, rows)
    run_script(EXPORT_VMAPPED, tmp_path, [blob])
    results = run_script(RUN_VMAPPED, tmp_path, [blob, a_file, rows_file])
    np.testing.assert_allclose(results["log"], np.log(a), rtol=1e-15)
    np.testing.assert_array_equal(results["plus"], rows + 2)  # one call: 2-d
    assert "CheckedLog: row 5 of the batch (index (1, 2)): checked_log: x[3] = -2" in results.get(
        "error", ""
    ), results


VMAP_FLOAT32 = """
import json
import numpy as np, pytensor.tensor as pt
import jax
from examples import load_op_module
from libsection.pytensor import pytensor_op
from test_batched import jax_function
x = pt.dvector("x")
log = jax_function([x], [pytensor_op(load_op_module("checked_log").CheckedLog())(x)])
jax.config.update("jax_enable_x64", False)  # as PyTensor's JAX mode for floatX=float32
a = np.arange(1.0, 13.0).reshape(3, 4)
out = jax.jit(jax.vmap(log))(a)
print(json.dumps({"x64": jax.config.jax_enable_x64, "dtype": str(out.dtype),
                  "log": np.asarray(out, np.float64).tolist()}))
"""


def test_jax_vmap_with_x64_off_runs_the_float64_op_per_element(tmp_path):
    # float32 buffers for a float64 op: the C loop would read them as they are, so the handler
    # converts each element instead.
    pytest.importorskip("jax", reason="JAX is not installed (the Python 3.12 stack has it)")
    results = run_script(VMAP_FLOAT32, tmp_path, [])
    assert results["x64"] is False and results["dtype"] == "float32"
    expected = np.log(np.arange(1.0, 13.0).reshape(3, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(results["log"], np.float32), expected)


def test_jax_vmap_of_grad_batches_the_gradients_own_calls(cache_dir, monkeypatch):
    jax = pytest.importorskip("jax", reason="JAX is not installed (the Python 3.12 stack has it)")
    batches = []
    ffi_batch = _batched.ffi_batch

    def counted(*args):
        batch = ffi_batch(*args)
        batches.append(batch)
        return batch

    monkeypatch.setattr(_batched, "ffi_batch", counted)
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = jax_function([x, y], [(vec_mul()(x, y) ** 2).sum()])
    a, b = rng.random((6, 3)), rng.random((6, 3))
    ga, gb = jax.jit(jax.vmap(jax.grad(fn, argnums=(0, 1))))(a, b)
    np.testing.assert_allclose(np.asarray(ga), 2 * a * b * b, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(gb), 2 * a * a * b, rtol=1e-14)
    # The forward call and the two of the gradient (VecMul's gradient is VecMul) each have a
    # Batched, which runs their vmapped batch in the C loop.
    assert len(batches) >= 3 and all(isinstance(b, _core.Batched) for b in batches), batches


# ---------------------------------------------------------------- PyMC


def test_pymc_vectorize_over_posterior_runs_the_batched_node(cache_dir):
    pm = pytest.importorskip("pymc", reason="PyMC is installed on the py312 stack only")
    xr = pytest.importorskip("xarray")
    from pymc.sampling.forward import vectorize_over_posterior

    op = vec_mul()
    data = np.array([0.5, -1.0, 2.0])
    with pm.Model():
        mu = pm.Normal("mu", shape=3)
        scaled = op(mu, pm.Data("data", data))  # not a constant: the node is not folded away
    draws = rng.normal(size=(2, 5, 3))
    posterior = xr.Dataset(
        {"mu": (("chain", "draw", "mu_dim_0"), draws)},
        coords={"chain": [0, 1], "draw": np.arange(5)},
    )
    [batched] = vectorize_over_posterior([scaled], posterior, [mu])
    f, ops = compiled([], batched, "FAST_RUN")
    assert "BatchedOp" in ops, ops
    single = pytensor.function([mu], scaled)
    expected = np.stack([single(d) for d in draws.reshape(-1, 3)]).reshape(draws.shape)
    np.testing.assert_array_equal(f(), expected)
