"""Two real compiled kernels ported as an op author would port them, each written once with the
DTYPE macros and no gradient (libsection derives it), beside the same op with a hand-written
reverse-mode gradient in C, the way the packages themselves write it. They are the measuring
stick of bench/bench_gradient_scaling.py; tests/python/test_gradient_kernels.py checks them.

* ``Kepler`` (kepler/kepler.c): Kepler's equation solved element by element, mean anomaly M and
  eccentricity e (arrays of one length) to sin and cos of the true anomaly, as exoplanet-era
  radial-velocity and transit codes do. ``KeplerHand``'s gradient is ``KeplerGrad``
  (kepler/kepler_grad.c): the implicit function theorem at the solution.
* ``Celerite`` (celerite/celerite.c): the log-likelihood of a Gaussian process with a celerite
  kernel (Foreman-Mackey et al. 2017), O(N J^2), from the coefficients of its real terms
  (a, c) and complex terms (a, b, c, d) and the data (t, diag, y). ``CeleriteHand``'s gradient
  is ``CeleriteGrad`` (celerite/celerite_grad.c): the backward sweep of the factorization,
  celerite2's approach, in every input.

Their func_files resolve against this directory. The ops are standalone
(``libsection.ExternalCOp``, called on NumPy arrays); ``pytensor_op`` puts them in graphs.
"""

from __future__ import annotations

import numpy as np

import libsection
from libsection.pytensor import pytensor_op

# ---------------------------------------------------------------- Kepler's equation


def _vector(op: str, x: str, what: str) -> None:
    if x != "float64[:]":
        raise TypeError(f"{op}: {what} is a float64 vector, not {x}")


class Kepler(libsection.ExternalCOp):
    """(sin f, cos f) of the true anomaly f for mean anomalies M and eccentricities e (vectors
    of one length, 0 <= e < 1). No gradient of its own: libsection derives it from its code."""

    func_files = ["kepler/kepler.c"]
    func_name = "APPLY_SPECIFIC(kepler)"

    def output_types(self, mean_anomaly, eccentricity):
        _vector(type(self).__name__, mean_anomaly, "M")
        _vector(type(self).__name__, eccentricity, "e")
        return ["float64[:]", "float64[:]"]

    def infer_shape(self, *args):  # (fgraph, node, shapes) before PyTensor 3.3, then (node, shapes)
        shapes = args[-1]
        return [shapes[0], shapes[0]]


class KeplerGrad(libsection.ExternalCOp):
    """The gradient of ``Kepler`` in M and e for the cotangents of sin f and cos f:
    ``(e, sin f, cos f, g_sin, g_cos) -> (g_M, g_e)``."""

    func_files = ["kepler/kepler_grad.c"]
    func_name = "APPLY_SPECIFIC(kepler_grad)"

    def output_types(self, eccentricity, sin_f, cos_f, g_sin, g_cos):
        for name, x in zip(
            ("e", "sin f", "cos f", "g_sin", "g_cos"),
            (eccentricity, sin_f, cos_f, g_sin, g_cos),
        ):
            _vector(type(self).__name__, x, name)
        return ["float64[:]", "float64[:]"]

    def infer_shape(self, *args):
        shapes = args[-1]
        return [shapes[0], shapes[0]]


def _cotangent_or_zeros(g, like):
    import pytensor.tensor as pt
    from pytensor.gradient import DisconnectedType

    if isinstance(g.type, DisconnectedType):
        return pt.zeros_like(like)
    return g


class KeplerHand(Kepler):
    """``Kepler`` with its hand-written gradient, ``KeplerGrad``."""

    def pullback(self, inputs, outputs, cotangents):
        _, eccentricity = inputs
        sin_f, cos_f = outputs
        g_sin, g_cos = (_cotangent_or_zeros(g, y) for g, y in zip(cotangents, outputs))
        grad_m, grad_e = pytensor_op(KeplerGrad())(eccentricity, sin_f, cos_f, g_sin, g_cos)
        return [grad_m, grad_e]


def kepler_numpy(mean_anomaly, eccentricity, iterations: int = 60):
    """(sin f, cos f) by Newton's method in NumPy, many more steps than it needs."""
    m = np.asarray(mean_anomaly, dtype=float)
    e = np.asarray(eccentricity, dtype=float)
    m = np.mod(m + np.pi, 2 * np.pi) - np.pi
    big_e = np.where(e > 0.8, np.pi * np.sign(m), m)
    for _ in range(iterations):
        big_e = big_e - (big_e - e * np.sin(big_e) - m) / (1 - e * np.cos(big_e))
    denominator = 1 - e * np.cos(big_e)
    return (
        np.sqrt(1 - e * e) * np.sin(big_e) / denominator,
        (np.cos(big_e) - e) / denominator,
    )


def kepler_inputs(n: int, seed: int = 47):
    """n mean anomalies over several orbits (negative ones too) and eccentricities in
    [0, 0.95)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-20.0, 20.0, n), rng.uniform(0.0, 0.95, n)


# ---------------------------------------------------------------- a celerite GP likelihood

CELERITE_INPUTS = ("a_real", "c_real", "a_complex", "b_complex", "c_complex", "d_complex")
CELERITE_DATA = ("t", "diag", "y")


class Celerite(libsection.ExternalCOp):
    """The log-likelihood of y, observed at sorted times t with white noise ``diag`` (yerr^2),
    under a celerite kernel of real terms (a_real, c_real) and complex terms (a_complex,
    b_complex, c_complex, d_complex): nine vectors, the coefficients of each kind of one length,
    the data of another. No gradient of its own: libsection derives it from its code."""

    func_files = ["celerite/celerite_kernel.c", "celerite/celerite.c"]
    func_name = "APPLY_SPECIFIC(celerite_loglik)"

    def output_types(self, *inputs):
        for name, x in zip(CELERITE_INPUTS + CELERITE_DATA, inputs):
            _vector(type(self).__name__, x, name)
        return ["float64[]"]

    def infer_shape(self, *args):
        return [()]


class CeleriteGrad(libsection.ExternalCOp):
    """The gradient of ``Celerite``'s log-likelihood in each of its nine inputs."""

    func_files = ["celerite/celerite_kernel.c", "celerite/celerite_grad.c"]
    func_name = "APPLY_SPECIFIC(celerite_grad)"

    def output_types(self, *inputs):
        for name, x in zip(CELERITE_INPUTS + CELERITE_DATA, inputs):
            _vector(type(self).__name__, x, name)
        return ["float64[:]"] * 9

    def infer_shape(self, *args):
        return list(args[-1])


class CeleriteHand(Celerite):
    """``Celerite`` with its hand-written gradient, ``CeleriteGrad``."""

    def pullback(self, inputs, outputs, cotangents):
        (g,) = cotangents
        return [g * grad for grad in pytensor_op(CeleriteGrad())(*inputs)]


def celerite_numpy(a_real, c_real, a_complex, b_complex, c_complex, d_complex, t, diag, y):
    """The same log-likelihood from the dense covariance and its Cholesky factor."""
    tau = np.abs(np.subtract.outer(t, t))
    k = np.diag(np.asarray(diag, dtype=float))
    for a, c in zip(a_real, c_real):
        k = k + a * np.exp(-c * tau)
    for a, b, c, d in zip(a_complex, b_complex, c_complex, d_complex):
        k = k + np.exp(-c * tau) * (a * np.cos(d * tau) + b * np.sin(d * tau))
    factor = np.linalg.cholesky(k)
    z = np.linalg.solve(factor, y)
    return -0.5 * (z @ z) - np.log(np.diag(factor)).sum() - 0.5 * len(t) * np.log(2 * np.pi)


def celerite_coefficients(real_terms: int = 1, complex_terms: int = 1):
    """Coefficients of a valid kernel (each complex term with |b d| < a c): six vectors."""
    a_real = 0.6 + 0.3 * np.arange(real_terms)
    c_real = 0.4 + 0.5 * np.arange(real_terms)
    a_complex = 1.0 + 0.2 * np.arange(complex_terms)
    b_complex = 0.1 + 0.05 * np.arange(complex_terms)
    c_complex = 0.5 + 0.3 * np.arange(complex_terms)
    d_complex = 2.0 + 1.1 * np.arange(complex_terms)
    return a_real, c_real, a_complex, b_complex, c_complex, d_complex


def celerite_data(n: int, seed: int = 47):
    """(t, diag, y): n sorted times about 0.1 apart, noise variances, and observations of a
    quasi-periodic signal."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(0.02, 0.18, n))
    yerr = rng.uniform(0.1, 0.3, n)
    y = np.sin(2.0 * t) + 0.3 * np.cos(0.7 * t) + yerr * rng.normal(size=n)
    return t, yerr**2, y


# ---------------------------------------------------------------- a radial-velocity model


def rv_data(n: int = 60, seed: int = 47):
    """(t, rv, rv_err): n radial velocities of one planet (P = 12.3 d, K = 7 m/s, e = 0.3,
    omega = 1.1, phase 0.4, offset 1.5 m/s) over 200 days, with 2 m/s noise."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 200.0, n))
    sin_f, cos_f = kepler_numpy(2 * np.pi * t / 12.3 - 0.4, np.full(n, 0.3))
    omega = 1.1
    rv = 7.0 * (np.cos(omega) * cos_f - np.sin(omega) * sin_f + 0.3 * np.cos(omega)) + 1.5
    err = np.full(n, 2.0)
    return t, rv + err * rng.normal(size=n), err


def rv_model(op, t, rv, rv_err):
    """A PyMC model of one Keplerian orbit whose true anomaly ``op`` (Kepler or KeplerHand)
    computes: period, semi-amplitude, eccentricity, argument of periastron, phase, offset and
    jitter."""
    import pymc as pm
    import pytensor.tensor as pt

    kepler = pytensor_op(op)
    with pm.Model() as model:
        log_period = pm.Normal("log_period", np.log(12.3), 0.05)
        log_k = pm.Normal("log_k", np.log(7.0), 0.5)
        ecc = pm.Uniform("e", 0.0, 0.9)
        omega = pm.Uniform("omega", -np.pi, np.pi)
        phase = pm.Uniform("phase", -np.pi, np.pi)
        offset = pm.Normal("offset", 0.0, 5.0)
        log_jitter = pm.Normal("log_jitter", 0.0, 1.0)
        mean_anomaly = 2 * np.pi * t / pt.exp(log_period) - phase
        sin_f, cos_f = kepler(mean_anomaly, pt.zeros_like(mean_anomaly) + ecc)
        velocity = pt.exp(log_k) * (
            pt.cos(omega) * cos_f - pt.sin(omega) * sin_f + ecc * pt.cos(omega)
        )
        pm.Normal(
            "rv",
            velocity + offset,
            pt.sqrt(rv_err**2 + pt.exp(2 * log_jitter)),
            observed=rv,
        )
    return model
