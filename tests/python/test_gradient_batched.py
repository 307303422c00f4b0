"""The derived gradient of a batched op is itself a batched node: one C loop over the rows, in
every mode (python/libsection/_batched_pytensor.py batches a ``Blockwise`` of a derivative as it
batches the op's own), and in JAX's ``vmap`` of ``grad``.

The ops (tests/python/data/gradient): an elementwise solver written for one point (0-d inputs)
and batched by ``pt.vectorize``, the idiom for an elementwise op; and an op of a vector with a
memo in its struct, batched over the rows of a matrix.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.blockwise import Blockwise

from libsection import _gradient
from libsection._batched_pytensor import BatchedOp

sys.path.insert(0, str(Path(__file__).resolve().parent / "data" / "gradient"))
from gradient_ops import Eccentric, Memo, eccentric_numpy, forward_product, memo_gradient  # noqa: E402

MODES = ["CVM", "FAST_COMPILE", "NUMBA", "JAX"]  # JAX: on the stacks that pin it
M = np.linspace(-3.0, 3.0, 41)
E = np.linspace(0.0, 0.9, 41)
W = np.cos(np.arange(41.0))

pytestmark = pytest.mark.usefixtures("cache_dir")


def batched_derivatives(f) -> list:
    """The cores of ``f``'s batched derivative nodes; a ``Blockwise`` of one (a Python loop over
    the rows) fails the test."""
    nodes = f.maker.fgraph.apply_nodes
    loops = [n for n in nodes if isinstance(n.op, Blockwise)]
    assert loops == [], f"rows run one by one: {loops}"
    return [
        n.op.core_op
        for n in nodes
        if isinstance(n.op, BatchedOp) and isinstance(n.op.core_op, _gradient.Derivative)
    ]


def eccentric_graph():
    m, e = pt.dvector("m"), pt.dvector("e")
    anomaly = pt.vectorize(Eccentric(), "(),()->()")(m, e)
    return m, e, anomaly, (W * anomaly).sum()


@pytest.mark.parametrize("mode", MODES)
def test_the_gradient_of_a_vectorized_elementwise_op_runs_its_rows_in_one_c_loop(mode):
    if mode == "JAX":
        pytest.importorskip("jax")
    m, e, anomaly, total = eccentric_graph()
    f = pytensor.function([m, e], [total, *pt.grad(total, [m, e])], mode=mode)
    (gradient,) = batched_derivatives(f)
    assert isinstance(gradient, _gradient.DerivedGradient)
    value, dm, de = f(M, E)
    expected, d_m, d_e = eccentric_numpy(M, E)
    np.testing.assert_allclose(value, (W * expected).sum(), rtol=1e-12)
    np.testing.assert_allclose(dm, W * d_m, rtol=1e-9)
    np.testing.assert_allclose(de, W * d_e, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", ["CVM", "NUMBA"])
def test_a_batched_gradient_differentiates_only_the_inputs_the_function_uses(mode):
    m, e, anomaly, total = eccentric_graph()
    f = pytensor.function([m, e], pt.grad(total, m), mode=mode)
    (gradient,) = batched_derivatives(f)
    assert gradient.differentiated == (True, False)  # e is data here: it costs no tangent
    np.testing.assert_allclose(f(M, E), W * eccentric_numpy(M, E)[1], rtol=1e-9)


@pytest.mark.parametrize("mode", ["CVM", "NUMBA"])
def test_the_pushforward_of_a_vectorized_op_runs_its_rows_in_one_c_loop(mode):
    m, e, anomaly, _ = eccentric_graph()
    v = pt.dvector("v")
    f = pytensor.function([m, e, v], forward_product(anomaly, m, v), mode=mode)
    (pushforward,) = batched_derivatives(f)
    assert isinstance(pushforward, _gradient.DerivedPushforward)
    tangent = np.sin(np.arange(41.0))
    np.testing.assert_allclose(f(M, E, tangent), tangent * eccentric_numpy(M, E)[1], rtol=1e-9)


@pytest.mark.parametrize("derivative_mode", ["forward", "reverse"])
def test_each_row_of_a_batched_gradient_starts_from_a_fresh_struct(monkeypatch, derivative_mode):
    # Memo keeps its last input and result in its struct: equal rows would hand the first row's
    # derivatives (or tape) to the next if the rows shared a pass's struct.
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", derivative_mode)
    x = pt.dmatrix("x")
    total = pt.vectorize(Memo(), "(n)->()")(x).sum()
    f = pytensor.function([x], pt.grad(total, x), mode="CVM")
    assert len(batched_derivatives(f)) == 1
    row = np.linspace(-1.0, 1.0, 12)
    rows = np.stack([row, row, row[::-1], row])
    np.testing.assert_allclose(f(rows), [memo_gradient(r) for r in rows], rtol=1e-12)


def test_an_error_in_one_row_names_the_op():
    m, e, anomaly, total = eccentric_graph()
    f = pytensor.function([m, e], pt.grad(total, e), mode="CVM")
    bad = E.copy()
    bad[7] = 1.5
    with pytest.raises(ValueError, match=r"eccentric: e is outside \[0, 1\)"):
        f(M, bad)


def test_jax_vmap_of_a_derived_gradient_runs_its_rows_in_one_c_loop():
    jax = pytest.importorskip("jax")
    from libsection import _jax_ffi

    before = set(_jax_ffi._live.keys())

    m, e = pt.dscalar("m"), pt.dscalar("e")
    out = Eccentric()(m, e)
    fn = pytensor.function([m, e], out, mode="JAX").vm.jit_fn
    grad = jax.jit(jax.vmap(jax.grad(lambda a, b: fn(a, b)[0], argnums=(0, 1))))
    dm, de = grad(M, E)
    _, d_m, d_e = eccentric_numpy(M, E)
    np.testing.assert_allclose(np.asarray(dm), d_m, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(de), d_e, rtol=1e-9, atol=1e-12)
    made = [i for k, i in list(_jax_ffi._live.items()) if k not in before]  # this test's
    derivatives = [i for i in made if "pullback" in i.compiled.info["ops"][0]]
    assert derivatives and all(i.batched is not None for i in derivatives)


def test_jax_grad_of_a_vectorized_op_runs_its_gradients_rows_in_one_c_loop():
    jax = pytest.importorskip("jax")
    from libsection import _jax_ffi

    before = set(_jax_ffi._live.keys())

    m, e, anomaly, _ = eccentric_graph()
    fn = pytensor.function([m, e], anomaly, mode="JAX").vm.jit_fn
    grad = jax.jit(jax.grad(lambda a, b: (W * fn(a, b)[0]).sum(), argnums=(0, 1)))
    dm, de = grad(M, E)
    _, d_m, d_e = eccentric_numpy(M, E)
    np.testing.assert_allclose(np.asarray(dm), W * d_m, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(de), W * d_e, rtol=1e-9, atol=1e-12)
    made = [i for k, i in list(_jax_ffi._live.items()) if k not in before]  # this test's
    derivatives = [i for i in made if "pullback" in i.compiled.info["ops"][0]]
    assert derivatives and all(i.batched is not None for i in derivatives)
