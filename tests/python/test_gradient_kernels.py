"""The benchmark kernels of bench/kernels (bench/bench_gradient_scaling.py's measuring stick) are
right: each op's values against NumPy, each hand-written C gradient against central
differences, the gradient libsection derives from the same op's code against the hand-written
one, and a clear error for each bad input.

The kernels are an elementwise Kepler solver (kepler/kepler.c, its gradient kepler_grad.c by the
implicit function theorem) and a celerite Gaussian-process log-likelihood (celerite/celerite.c,
its gradient celerite_grad.c: the backward sweep of the factorization, in every input).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from libsection.pytensor import pytensor_op

KERNELS = Path(__file__).resolve().parents[2] / "bench" / "kernels"
sys.path.insert(0, str(KERNELS))
from gradient_kernels import (  # noqa: E402
    CELERITE_DATA,
    CELERITE_INPUTS,
    Celerite,
    CeleriteGrad,
    CeleriteHand,
    Kepler,
    KeplerGrad,
    KeplerHand,
    celerite_coefficients,
    celerite_data,
    celerite_numpy,
    kepler_inputs,
    kepler_numpy,
    rv_data,
    rv_model,
)

STEP = 1e-6


@pytest.fixture(scope="module", autouse=True)
def shared_cache(tmp_path_factory):
    """One compile cache for the file: the cases build the same few modules."""
    with pytest.MonkeyPatch.context() as m:
        m.setenv("LIBSECTION_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


def test_kernel_files_lint_clean(section_lint):
    lint = subprocess.run([section_lint, str(KERNELS)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    derived = [KERNELS / "kepler/kepler.c", KERNELS / "celerite/celerite_kernel.c"]
    derived.append(KERNELS / "celerite/celerite.c")
    lint = subprocess.run(
        [section_lint, "--differentiated", *map(str, derived)], capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


# ---------------------------------------------------------------- Kepler


def test_kepler_matches_newton_in_numpy():
    m, e = kepler_inputs(2000)
    e[:3] = [0.0, 0.0, 0.94]
    m[:3] = [0.0, -np.pi, 1e-9]
    sin_f, cos_f = Kepler()(m, e)
    expected_sin, expected_cos = kepler_numpy(m, e)
    np.testing.assert_allclose(sin_f, expected_sin, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cos_f, expected_cos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sin_f**2 + cos_f**2, 1.0, rtol=1e-13)


def test_kepler_hand_written_gradient_is_central_differences():
    """Elementwise: moving every M (or e) by h moves each output by its own derivative."""
    m, e = kepler_inputs(500, seed=3)
    rng = np.random.default_rng(4)
    g_sin, g_cos = rng.normal(size=(2, m.size))
    op = Kepler()
    sin_f, cos_f = op(m, e)
    grad_m, grad_e = KeplerGrad()(e, sin_f, cos_f, g_sin, g_cos)
    for grad, args in ((grad_m, lambda h: (m + h, e)), (grad_e, lambda h: (m, e + h))):
        up, down = op(*args(STEP)), op(*args(-STEP))
        central = sum(g * (u - d) for g, u, d in zip((g_sin, g_cos), up, down)) / (2 * STEP)
        np.testing.assert_allclose(grad, central, rtol=1e-6, atol=1e-7)


def kepler_value_and_gradient(op, n, mode):
    m = pt.tensor("m", dtype="float64", shape=(n,))
    e = pt.tensor("e", dtype="float64", shape=(n,))
    sin_f, cos_f = pytensor_op(op)(m, e)
    weights = np.random.default_rng(n).normal(size=(2, n))
    loss = (weights[0] * sin_f + weights[1] * cos_f).sum()
    return pytensor.function([m, e], [loss, *pt.grad(loss, [m, e])], mode=mode)


@pytest.mark.parametrize("n", [1, 9, 60])
def test_kepler_derived_gradient_is_the_hand_written_one(n):
    m, e = kepler_inputs(n, seed=n)
    derived = kepler_value_and_gradient(Kepler(), n, "CVM")(m, e)
    hand = kepler_value_and_gradient(KeplerHand(), n, "CVM")(m, e)
    np.testing.assert_allclose(derived[0], hand[0], rtol=1e-14)
    for d, h in zip(derived[1:], hand[1:]):
        np.testing.assert_allclose(d, h, rtol=1e-9, atol=1e-12)


def test_kepler_hand_written_gradient_with_one_output_used():
    """A disconnected cotangent (cos f not used) counts as zero."""
    m, e = kepler_inputs(20, seed=5)
    mv, ev = pt.dvector("m"), pt.dvector("e")
    grads = {}
    for name, op in (("derived", Kepler()), ("hand", KeplerHand())):
        sin_f, _ = pytensor_op(op)(mv, ev)
        grads[name] = pytensor.function([mv, ev], pt.grad(sin_f.sum(), [mv, ev]))(m, e)
    for d, h in zip(grads["derived"], grads["hand"]):
        np.testing.assert_allclose(d, h, rtol=1e-9, atol=1e-12)


def test_kepler_refuses_bad_inputs():
    m, e = kepler_inputs(5)
    e[3] = 1.0
    with pytest.raises(ValueError, match=r"kepler: e\[3\] is outside \[0, 1\)"):
        Kepler()(m, e)
    e[3] = np.nan
    with pytest.raises(ValueError, match=r"e\[3\]"):
        Kepler()(m, e)
    with pytest.raises(ValueError, match="M has 5 elements and e has 4"):
        Kepler()(m, e[:4])
    with pytest.raises(TypeError, match=r"Kepler: M is a float64 vector, not float64\[:,:\]"):
        Kepler()(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="kepler_grad: input 2 has 4 elements and e has 5"):
        KeplerGrad()(e, m, m[:4], m, m)


# ---------------------------------------------------------------- celerite

KERNELS_OF_TERMS = [(1, 1), (2, 0), (0, 2), (1, 2)]


@pytest.mark.parametrize("terms", KERNELS_OF_TERMS, ids=lambda t: f"{t[0]}real-{t[1]}complex")
def test_celerite_is_the_dense_log_likelihood(terms):
    args = (*celerite_coefficients(*terms), *celerite_data(80))
    np.testing.assert_allclose(Celerite()(*args), celerite_numpy(*args), rtol=1e-11)


def test_celerite_with_one_observation_and_unsorted_ties():
    coefficients = celerite_coefficients(1, 1)
    one = (np.array([0.3]), np.array([0.04]), np.array([0.5]))
    np.testing.assert_allclose(
        Celerite()(*coefficients, *one), celerite_numpy(*coefficients, *one), rtol=1e-13
    )
    t, diag, y = celerite_data(10)
    t[4] = t[3]  # equal times are sorted
    args = (*coefficients, t, diag, y)
    np.testing.assert_allclose(Celerite()(*args), celerite_numpy(*args), rtol=1e-11)


@pytest.mark.parametrize("terms", KERNELS_OF_TERMS, ids=lambda t: f"{t[0]}real-{t[1]}complex")
def test_celerite_hand_written_gradient_is_central_differences(terms):
    args = [np.array(a, dtype=float) for a in (*celerite_coefficients(*terms), *celerite_data(25))]
    grads = CeleriteGrad()(*args)
    op = Celerite()
    for k, name in enumerate(CELERITE_INPUTS + CELERITE_DATA):
        central = np.empty_like(args[k])
        for j in range(args[k].size):
            up = [a.copy() for a in args]
            down = [a.copy() for a in args]
            up[k][j] += STEP
            down[k][j] -= STEP
            central[j] = (op(*up) - op(*down)) / (2 * STEP)
        np.testing.assert_allclose(grads[k], central, rtol=1e-6, atol=1e-6, err_msg=name)


def celerite_value_and_gradient(op, n, mode):
    ins = [pt.dvector(name) for name in CELERITE_INPUTS + CELERITE_DATA]
    ll = pytensor_op(op)(*ins)
    return pytensor.function(ins, [ll, *pt.grad(ll, ins)], mode=mode)


@pytest.mark.parametrize("n", [1, 40])
def test_celerite_derived_gradient_is_the_hand_written_one(n):
    args = (*celerite_coefficients(1, 2), *celerite_data(n, seed=n))
    derived = celerite_value_and_gradient(Celerite(), n, "CVM")(*args)
    hand = celerite_value_and_gradient(CeleriteHand(), n, "CVM")(*args)
    np.testing.assert_allclose(derived[0], hand[0], rtol=1e-14)
    for name, d, h in zip(CELERITE_INPUTS + CELERITE_DATA, derived[1:], hand[1:]):
        np.testing.assert_allclose(d, h, rtol=1e-8, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("op", [Celerite(), CeleriteGrad()], ids=lambda op: type(op).__name__)
def test_celerite_refuses_bad_inputs(op):
    coefficients = celerite_coefficients(1, 1)
    t, diag, y = celerite_data(12)
    with pytest.raises(ValueError, match="celerite: diag has 11 values and t 12"):
        op(*coefficients, t, diag[:11], y)
    with pytest.raises(ValueError, match="celerite: d_complex has 2 values and a_complex 1"):
        op(*coefficients[:5], np.ones(2), t, diag, y)
    unsorted = t.copy()
    unsorted[[5, 6]] = unsorted[[6, 5]]
    with pytest.raises(ValueError, match=r"celerite: t\[6\] < t\[5\]; sort the times"):
        op(*coefficients, unsorted, diag, y)
    negative = diag.copy()
    negative[7] = -10.0
    with pytest.raises(ValueError, match=r"not positive definite \(row 7"):
        op(*coefficients, t, negative, y)
    with pytest.raises(TypeError, match="y is a float64 vector"):
        op(*coefficients, t, diag, y[:, None])


# ---------------------------------------------------------------- JAX, as the benchmark takes it


def test_jax_value_and_grad_of_both_kernels_is_the_hand_written_gradient():
    """jax.value_and_grad of each graph's JAX conversion (PyMC's get_jaxified_graph), with the
    derived and the hand-written gradient, equals the hand-written gradient op called directly:
    the benchmark's JAX cells compute the right thing."""
    jax = pytest.importorskip("jax", reason="JAX is installed on the py312 stack only")
    pytest.importorskip("pymc", reason="PyMC is installed on the py312 stack only")
    from pymc.sampling.jax import get_jaxified_graph

    jax.config.update("jax_enable_x64", True)
    m, e = kepler_inputs(30, seed=6)
    g_sin, g_cos = np.random.default_rng(6).normal(size=(2, 30))
    expected_kepler = KeplerGrad()(e, *Kepler()(m, e), g_sin, g_cos)
    coefficients = celerite_coefficients(1, 1)
    data = celerite_data(30, seed=6)
    expected_celerite = CeleriteGrad()(*coefficients, *data)
    for kepler, celerite in ((Kepler(), Celerite()), (KeplerHand(), CeleriteHand())):
        mv, ev = pt.dvector("m"), pt.dvector("e")
        sin_f, cos_f = pytensor_op(kepler)(mv, ev)
        fn = get_jaxified_graph([mv, ev], [(g_sin * sin_f + g_cos * cos_f).sum()])
        step = jax.jit(jax.value_and_grad(lambda a, b, fn=fn: fn(a, b)[0], argnums=(0, 1)))
        _, grads = step(m, e)
        for got, expected in zip(grads, expected_kepler):
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
        coefficient_vars = [pt.dvector(name) for name in CELERITE_INPUTS[2:]]
        data_vars = [pt.dvector(name) for name in CELERITE_DATA]
        ll = pytensor_op(celerite)(*coefficients[:2], *coefficient_vars, *data_vars)
        fn = get_jaxified_graph(coefficient_vars + data_vars, [ll])
        step = jax.jit(jax.value_and_grad(lambda *a, fn=fn: fn(*a)[0], argnums=(0, 1, 2, 3)))
        value, grads = step(*coefficients[2:], *data)
        np.testing.assert_allclose(value, celerite_numpy(*coefficients, *data), rtol=1e-11)
        for got, expected in zip(grads, expected_celerite[2:6]):
            np.testing.assert_allclose(got, expected, rtol=1e-8)


def jax_derived_gradients(monkeypatch) -> list:
    """Records the ``differentiated`` marks of every derived gradient node JAX converts (each
    pullback graph's ``DerivedGradient``, converted by libsection's JAX function)."""
    from libsection import _gradient, _jax

    seen: list = []
    convert = _jax.jax_function

    def recording(node, own_perform):
        if isinstance(node.op, _gradient.DerivedGradient):
            seen.append(node.op.differentiated)
        return convert(node, own_perform)

    monkeypatch.setattr(_jax, "jax_function", recording)
    return seen


def test_jax_differentiates_only_what_jax_perturbs(monkeypatch):
    """jax.grad of the celerite log-likelihood in one scalar coefficient, its N-length data held
    constant three ways (arguments outside argnums, jax.lax.stop_gradient, values closed over):
    the derived gradient differentiates that coefficient alone, not the 3N data scalars too,
    and its value is PyTensor's gradient and central differences. Each other set JAX
    differentiates gets a pullback of its own."""
    jax = pytest.importorskip("jax", reason="JAX is installed on the py312 stack only")
    pytest.importorskip("pymc", reason="PyMC is installed on the py312 stack only")
    from pymc.sampling.jax import get_jaxified_graph

    jax.config.update("jax_enable_x64", True)
    seen = jax_derived_gradients(monkeypatch)
    coefficients = celerite_coefficients(1, 1)
    data = celerite_data(40, seed=3)
    names = CELERITE_INPUTS + CELERITE_DATA
    ins = [pt.dvector(name) for name in names]
    ll = pytensor_op(Celerite())(*ins)
    fn = get_jaxified_graph(ins, [ll])
    args = (*coefficients, *data)
    a = names.index("a_complex")

    def value(*xs):
        return fn(*xs)[0]

    data_at = tuple(names.index(name) for name in CELERITE_DATA)

    def held(*xs):  # every input differentiated, the data behind stop_gradient
        return value(*[jax.lax.stop_gradient(x) if i in data_at else x for i, x in enumerate(xs)])

    grads = [
        jax.jit(jax.grad(value, argnums=a))(*args),
        jax.grad(held, argnums=(a, *data_at))(*args)[0],
        jax.grad(lambda x: value(*args[:a], x, *args[a + 1 :]))(args[a]),
    ]
    only_a = tuple(i == a for i in range(len(names)))
    assert seen == [only_a], seen  # one pullback, converted once, for the three

    expected = pytensor.function(ins, pt.grad(ll, ins[a]))(*args)
    up, down = list(args), list(args)
    up[a], down[a] = args[a] + STEP, args[a] - STEP
    central = (Celerite()(*up) - Celerite()(*down)) / (2 * STEP)
    for got in grads:
        np.testing.assert_allclose(got, expected, rtol=1e-9)
        np.testing.assert_allclose(got, central, rtol=1e-6)

    # Another set JAX differentiates (a coefficient and the times): its own narrowed node.
    t = names.index("t")
    jax.jit(jax.grad(value, argnums=(a, t)))(*args)
    assert seen[1:] == [tuple(i in (a, t) for i in range(len(names)))], seen


# ---------------------------------------------------------------- the radial-velocity model


def test_rv_model_has_the_same_density_and_gradient_with_either_kepler():
    pytest.importorskip("pymc", reason="PyMC is installed on the py312 stack only")
    data = rv_data()
    results = []
    for op in (Kepler(), KeplerHand()):
        model = rv_model(op, *data)
        point = model.initial_point()
        results.append((model.compile_logp()(point), model.compile_dlogp()(point)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-13)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9)
    assert np.all(np.isfinite(results[0][1])) and np.any(results[0][1] != 0)
