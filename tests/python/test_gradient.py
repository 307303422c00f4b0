"""Derivatives from an op's own C code (python/libsection/_gradient.py): ops with no gradient of
their own get exact ones, in every mode, equal to the same ops' hand-written gradients.

The ops (tests/python/data/gradient) are an ODE log-likelihood, a reduction, an op with an
integer input, an op with support and struct code, and an op written as a `code` section with
two outputs, an early exit and branches on values; each has a twin with a hand-written gradient
(in C for the ODE, in PyTensor terms otherwise).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.gradient import NullTypeGradError

try:
    from pytensor.graph.traversal import io_toposort
except ImportError:  # PyTensor before 3.3
    from pytensor.graph.basic import io_toposort

from libsection import _gradient
from libsection.pytensor import pytensor_op

sys.path.insert(0, str(Path(__file__).resolve().parent / "data" / "gradient"))
from gradient_ops import (  # noqa: E402
    Ema,
    EmaHand,
    Logistic,
    LogisticHand,
    PowerSum,
    PowerSumHand,
    SoftClip,
    WeightedLogSumExp,
    WeightedLogSumExpHand,
    forward_product,
    logistic_data,
    logistic_loglik_numpy,
    softclip_graph,
)


def _modes() -> list[str]:
    modes = ["CVM", "FAST_COMPILE", "NUMBA"]
    try:
        import jax  # noqa: F401
    except ImportError:
        return modes
    return [*modes, "JAX"]


MODES = _modes()
RTOL = 1e-9
OBS = logistic_data()
THETA = np.array([0.7, 9.0, 0.6])

pytestmark = pytest.mark.usefixtures("cache_dir")


def function(inputs, outputs, mode):
    return pytensor.function(inputs, outputs, mode=mode)


def derived_nodes(f) -> list:
    """The function's derivative nodes (not the values' taped pass a pullback sweeps)."""
    derivatives = (_gradient.DerivedGradient, _gradient.DerivedPushforward)
    return [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, derivatives)]


@pytest.mark.parametrize("mode", MODES)
def test_ode_log_likelihood_gradient_is_the_hand_written_one(mode):
    theta = pt.tensor("theta", dtype="float64", shape=(3,))
    results = {}
    for name, op in (("derived", Logistic()), ("hand", LogisticHand())):
        ll = pytensor_op(op)(theta, OBS)
        results[name] = function([theta], [ll, pt.grad(ll, theta)], mode)(THETA)
    value, derived = results["derived"]
    np.testing.assert_allclose(value, logistic_loglik_numpy(THETA, OBS), rtol=1e-12)
    np.testing.assert_allclose(derived, results["hand"][1], rtol=RTOL, atol=0)
    assert np.all(derived != 0)


def test_ode_gradient_is_exact_where_central_differences_are_not():
    theta = pt.tensor("theta", dtype="float64", shape=(3,))
    ll = pytensor_op(Logistic())(theta, OBS)
    f = function([theta], [ll, pt.grad(ll, theta)], "CVM")
    hand = function([theta], pt.grad(pytensor_op(LogisticHand())(theta, OBS), theta), "CVM")
    step = 1e-5
    central = np.array(
        [(f(THETA + step * e)[0] - f(THETA - step * e)[0]) / (2 * step) for e in np.eye(3)]
    )
    derived, exact = f(THETA)[1], hand(THETA)
    assert np.max(np.abs(derived / exact - 1)) < 1e-12
    assert np.max(np.abs(central / exact - 1)) > 1e-10  # differences are off by far more


@pytest.mark.parametrize("mode", MODES)
def test_reduction_gradient_in_both_inputs(mode):
    x, w = pt.dvector("x"), pt.dvector("w")
    xv = np.array([0.3, -1.2, 2.5, 0.0, 1.1])
    wv = np.array([0.5, 2.0, 0.25, 1.0, 3.0])
    grads = {}
    for name, op in (("derived", WeightedLogSumExp()), ("hand", WeightedLogSumExpHand())):
        out = op(x, w)
        grads[name] = function([x, w], pt.grad(out, [x, w]), mode)(xv, wv)
    for derived, hand in zip(grads["derived"], grads["hand"], strict=True):
        np.testing.assert_allclose(derived, hand, rtol=RTOL)


@pytest.mark.parametrize("mode", MODES)
def test_integer_input_stays_plain_and_its_gradient_is_undefined(mode):
    x, c = pt.dvector("x"), pt.dscalar("c")
    n = pt.lscalar("n")
    xv, cv, nv = np.array([0.5, -1.5, 2.0, 0.25]), 1.7, 3
    grads = {}
    for name, op in (("derived", PowerSum()), ("hand", PowerSumHand())):
        out = pytensor_op(op)(x, n, c)
        grads[name] = function([x, n, c], pt.grad(out, [x, c]), mode)(xv, nv, cv)
    for derived, hand in zip(grads["derived"], grads["hand"], strict=True):
        np.testing.assert_allclose(derived, hand, rtol=RTOL)
    with pytest.raises(NullTypeGradError, match="integer"):
        pt.grad(pytensor_op(PowerSum())(x, n.astype("float64").astype("int64"), c), n)


# Numba (0.65, the py311 stack's) says np.dot is faster on contiguous arrays when it compiles
# PyTensor's own dot of the gradient graph on a transposed view: PyTensor's code, not the op's.
@pytest.mark.filterwarnings("ignore:np.dot\\(\\) is faster on contiguous arrays")
@pytest.mark.parametrize("mode", MODES)
def test_op_with_support_and_struct_code(mode):
    x, a = pt.dvector("x"), pt.dscalar("a")
    weights = np.linspace(-1.0, 2.0, 7)
    xv, av = np.sin(np.arange(7.0)), 0.35
    grads = {}
    for name, op in (("derived", Ema()), ("hand", EmaHand())):
        cost = pt.dot(op(x, pt.scalar_from_tensor(a)), weights)
        grads[name] = function([x, a], [cost, *pt.grad(cost, [x, a])], mode)
    for _ in range(2):  # the struct's buffer is kept between calls
        derived, hand = grads["derived"](xv, av), grads["hand"](xv, av)
        for d, h in zip(derived, hand, strict=True):
            np.testing.assert_allclose(d, h, rtol=RTOL)


@pytest.mark.parametrize("mode", MODES)
def test_code_section_with_two_outputs_an_early_exit_and_branches(mode):
    x, limit = pt.dvector("x"), pt.dscalar("limit")
    xv = np.array([0.4, -2.0, 1.5, -0.7, 3.5, 0.2])  # |3.5| > limit: the loop stops there
    probe = np.array([1.0, -2.0, 0.5, 3.0, 1.5, 2.5])
    y, mean = SoftClip()(x, pt.scalar_from_tensor(limit))
    cost = pt.dot(y, probe) + 3 * pt.tensor_from_scalar(mean)
    y_ref, mean_ref = softclip_graph(x, limit)
    cost_ref = pt.dot(y_ref, probe) + 3 * mean_ref
    derived = function([x, limit], [cost, *pt.grad(cost, [x, limit])], mode)(xv, 3.0)
    hand = function([x, limit], [cost_ref, *pt.grad(cost_ref, [x, limit])], "FAST_COMPILE")(xv, 3.0)
    for d, h in zip(derived, hand, strict=True):
        np.testing.assert_allclose(d, h, rtol=RTOL)


# PyTensor's jacobian is a Scan whose inner graph FAST_COMPILE builds with PyTensor's own C
# ops, which warn when no BLAS is linked (pip's PyTensor): not this test's business.
@pytest.mark.filterwarnings("ignore:np.dot\\(\\) is faster on contiguous arrays")
@pytest.mark.filterwarnings("ignore:PyTensor could not link to a BLAS")
@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_an_op_with_struct_code(mode):
    x, a = pt.dvector("x"), pt.dscalar("a")
    xv = np.cos(np.arange(5.0))
    jac = {}
    for name, op in (("derived", Ema()), ("hand", EmaHand())):
        out = op(x, pt.scalar_from_tensor(a))
        jac[name] = function([x, a], pytensor.gradient.jacobian(out, x), mode)(xv, 0.6)
    np.testing.assert_allclose(jac["derived"], jac["hand"], rtol=RTOL, atol=1e-15)
    assert jac["derived"].shape == (5, 5)


@pytest.mark.filterwarnings("ignore:np.dot\\(\\) is faster on contiguous arrays")
@pytest.mark.filterwarnings("ignore:PyTensor could not link to a BLAS")
@pytest.mark.parametrize("mode", MODES)
def test_pushforward_is_the_jacobian_times_the_tangent(mode):
    x, a, v = pt.dvector("x"), pt.dscalar("a"), pt.dvector("v")
    xv, tangent = np.cos(np.arange(6.0)), np.linspace(1.0, -1.0, 6)
    out = Ema()(x, pt.scalar_from_tensor(a))
    jvp = forward_product(out, x, v)
    jac = pytensor.gradient.jacobian(EmaHand()(x, pt.scalar_from_tensor(a)), x)
    f = function([x, a, v], [jvp, jac], mode)
    got, expected_jac = f(xv, 0.3, tangent)
    np.testing.assert_allclose(got, expected_jac @ tangent, rtol=RTOL)
    assert np.all(got != 0)
    assert any(isinstance(n.op, _gradient.DerivedPushforward) for n in derived_nodes(f))


@pytest.mark.parametrize("mode", MODES)
def test_pushforward_of_an_array_and_a_number_against_central_differences(mode):
    # The pass is checked against the op's own values: a correct op's product is unchanged.
    x, limit, v = pt.dvector("x"), pt.dscalar("limit"), pt.dvector("v")
    xv = np.array([0.4, -2.0, 1.5, -0.7, 3.5, 0.2])
    tangent = np.array([1.0, -2.0, 0.5, 3.0, 1.5, 2.5])
    y, mean = SoftClip()(x, pt.scalar_from_tensor(limit))
    f = function([x, limit, v], [forward_product(y, x, v), forward_product(mean, x, v)], mode)
    dy, dmean = f(xv, 3.0, tangent)
    values = function([x, limit], [y, mean], "CVM")
    step = 1e-6
    ahead, behind = values(xv + step * tangent, 3.0), values(xv - step * tangent, 3.0)
    np.testing.assert_allclose(dy, (ahead[0] - behind[0]) / (2 * step), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(dmean, (ahead[1] - behind[1]) / (2 * step), rtol=1e-7)
    assert np.count_nonzero(dy) == 4 and dmean != 0  # the loop stops at 3.5


@pytest.mark.parametrize("mode", MODES)
def test_gradient_of_a_pullback_is_a_pushforward_equal_to_the_hand_written(mode):
    # d/du <J(x)^T u, w> = J(x) w: the derived gradient's pullback in its cotangent.
    x, a, u, w = pt.dvector("x"), pt.dscalar("a"), pt.dvector("u"), pt.dvector("w")
    xv, uv, wv = np.sin(np.arange(5.0)), np.linspace(-1.0, 1.0, 5), np.arange(1.0, 6.0)
    results = {}
    for name, op in (("derived", Ema()), ("hand", EmaHand())):
        out = op(x, pt.scalar_from_tensor(a))
        g = pt.grad(pt.dot(out, u), x)
        results[name] = function([x, a, u, w], pt.grad(pt.dot(g, w), u), mode)(xv, 0.4, uv, wv)
    np.testing.assert_allclose(results["derived"], results["hand"], rtol=RTOL)
    assert np.all(results["derived"] != 0)


def test_second_derivatives_raise_naming_the_op():
    theta = pt.tensor("theta", dtype="float64", shape=(3,))
    ll = pytensor_op(Logistic())(theta, OBS)
    g = pt.grad(ll, theta)
    with pytest.raises(NullTypeGradError, match="Logistic.*first derivatives"):
        pt.grad(g.sum(), theta)


def test_a_gradient_differentiates_only_the_inputs_the_function_uses():
    theta = pt.tensor("theta", dtype="float64", shape=(3,))
    obs = pt.dvector("obs")  # data given as an input, not a constant
    ll = pytensor_op(Logistic())(theta, obs)
    for mode in ("CVM", "FAST_COMPILE"):
        f = function([theta, obs], pt.grad(ll, theta), mode)
        (node,) = derived_nodes(f)
        assert node.op.differentiated == (True, False)
        np.testing.assert_allclose(
            f(THETA, OBS),
            function([theta], pt.grad(pytensor_op(LogisticHand())(theta, OBS), theta), "CVM")(
                THETA
            ),
            rtol=RTOL,
        )


def test_constants_are_not_differentiated():
    theta = pt.tensor("theta", dtype="float64", shape=(3,))
    g = pt.grad(pytensor_op(Logistic())(theta, OBS), theta)
    (node,) = [n for n in io_toposort([theta], [g]) if isinstance(n.op, _gradient.DerivedGradient)]
    assert node.op.differentiated == (True, False)


def test_an_op_has_one_gradient_module_whatever_the_static_shapes(cache_dir):
    import json

    xv, wv = np.linspace(-1.0, 2.0, 40), np.linspace(0.5, 2.0, 40)
    for shape in [(None,), (3,), (40,)]:
        n = 40 if shape == (None,) else shape[0]
        x = pt.tensor("x", dtype="float64", shape=shape)
        w = pt.tensor("w", dtype="float64", shape=shape)
        derived, hand = (
            function([x, w], pt.grad(op(x, w), [x, w]), "CVM")(xv[:n], wv[:n])
            for op in (WeightedLogSumExp(), WeightedLogSumExpHand())
        )
        np.testing.assert_allclose(derived, hand, rtol=RTOL)
    manifests = [json.loads(m.read_text()) for m in cache_dir.glob("entries/*/manifest.json")]
    pullbacks = {m["key"] for m in manifests if any("pullback" in op for op in m["ops"])}
    assert len(pullbacks) == 1  # one module for the three static shapes


def test_jax_transformations_of_the_derived_gradient():
    """jax.grad (a custom_vjp running the derived gradient's node as an FFI call), under jit
    and vmap, as numpyro and blackjax take it, and jax.jvp under jit."""
    jax = pytest.importorskip("jax", reason="JAX is installed on the py312 stack only")
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    theta = pt.tensor("theta", dtype="float64", shape=(3,))
    grads = {}
    for name, op in (("derived", Logistic()), ("hand", LogisticHand())):
        fgraph = FunctionGraph([theta], [pytensor_op(op)(theta, OBS)], clone=True)
        get_mode("JAX").optimizer(fgraph)
        fn = jax_funcify(fgraph)
        grad = jax.jit(jax.grad(lambda t, fn=fn: fn(t)[0]))
        points = np.stack([THETA, THETA * 1.1, THETA * 0.9])
        # jvp under jit runs the derived pushforward (the gradient's pass is not needed there)
        jvp = jax.jit(lambda t, v, fn=fn: jax.jvp(lambda s: fn(s)[0], (t,), (v,))[1])
        grads[name] = (
            np.asarray(grad(THETA)),
            np.asarray(jax.vmap(grad)(points)),
            np.asarray(jvp(THETA, np.array([1.0, -0.5, 2.0]))),
        )
    for derived, hand in zip(grads["derived"], grads["hand"], strict=True):
        np.testing.assert_allclose(derived, hand, rtol=RTOL)
    assert np.all(grads["derived"][0] != 0)
