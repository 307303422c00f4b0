"""The real client: a PyMC model whose likelihood runs a libsection op (C code, gradient given in
PyTensor terms), sampled with PyMC's NUTS and with nutpie; the posterior is known in closed form.

The model is normal-normal conjugate: mu ~ Normal(M0, S0), y_i ~ Normal(mu, SIGMA) with SIGMA
known, the likelihood written as sum(NegHalfSquare((y - mu) / SIGMA)), the normal log-density up
to a constant. The posterior of mu is Normal(POST_MEAN, POST_SD).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pm = pytest.importorskip("pymc")  # the py312 stack pins it (deps/stack-py312.txt)
import pytensor.tensor as pt

sys.path.insert(0, str(Path(__file__).resolve().parent / "data" / "pymc"))
from gaussian_ops import NegHalfSquare

M0, S0, SIGMA, N = 0.0, 5.0, 2.0, 40
Y = np.random.default_rng(20261122).normal(1.5, SIGMA, N)
POST_PRECISION = 1 / S0**2 + N / SIGMA**2
POST_MEAN = (M0 / S0**2 + Y.sum() / SIGMA**2) / POST_PRECISION
POST_SD = POST_PRECISION**-0.5
CHAINS, DRAWS = 2, 500


def model() -> pm.Model:
    with pm.Model() as m:
        mu = pm.Normal("mu", mu=M0, sigma=S0)
        pm.Potential("likelihood", pt.sum(NegHalfSquare()((Y - mu) / SIGMA)))
    return m


def check_posterior(draws: np.ndarray) -> None:
    # Monte Carlo error of the mean: POST_SD / sqrt(ESS). NUTS on this 1-d normal posterior gives
    # an ESS near the draw count; allowing for an ESS of only a quarter of the draws, 4 standard
    # errors is 4 * POST_SD / sqrt(CHAINS * DRAWS / 4) ~ 0.05 here, against a POST_SD of 0.31.
    assert draws.size == CHAINS * DRAWS
    mc_error = POST_SD / np.sqrt(draws.size / 4)
    assert abs(draws.mean() - POST_MEAN) < 4 * mc_error, (draws.mean(), POST_MEAN, mc_error)
    # The spread too: the relative error of a sample sd is about 1/sqrt(2 ESS), under 5% here.
    assert abs(draws.std() / POST_SD - 1) < 0.2, (draws.std(), POST_SD)


def test_model_logp_and_gradient_go_through_the_op(cache_dir):
    m = model()
    point = {"mu": 0.7}
    logp, dlogp = m.compile_logp(), m.compile_dlogp()
    expected = -0.5 * (((Y - 0.7) / SIGMA) ** 2).sum() - 0.5 * ((0.7 - M0) / S0) ** 2
    normal_constant = -0.5 * np.log(2 * np.pi * S0**2)
    # PyMC's normal log-density writes its constant with fewer digits (an absolute 3e-8); the
    # likelihood term is -17 here, so a wrong op would be far outside this.
    np.testing.assert_allclose(logp(point), expected + normal_constant, rtol=1e-8)
    expected_grad = ((Y - 0.7) / SIGMA**2).sum() - (0.7 - M0) / S0**2
    np.testing.assert_allclose(dlogp(point), [expected_grad], rtol=1e-12)


def sample(**kwargs):
    """pm.sample with the settings every sampler here shares: one core, a fixed seed."""
    return pm.sample(
        draws=DRAWS, tune=500, chains=CHAINS, cores=1, random_seed=1, progressbar=False, **kwargs
    )


# PyMC 6.4 picks nutpie by default when it is installed: name PyMC's own NUTS explicitly. Its
# logp and gradient are compiled in PyTensor's default mode (Numba) and in the C backend.
@pytest.mark.parametrize("mode", [None, "CVM"], ids=["default-mode", "CVM"])
def test_pymc_nuts_posterior_matches_the_conjugate_posterior(mode, cache_dir):
    with model():
        idata = sample(
            compute_convergence_checks=False,
            nuts_sampler="pymc",
            compile_kwargs={"mode": mode} if mode else None,
        )
    assert idata.sample_stats.attrs["inference_library"] == "pymc"
    check_posterior(np.asarray(idata.posterior["mu"]))


def test_nutpie_posterior_matches_the_conjugate_posterior(cache_dir):
    pytest.importorskip("nutpie")
    with model():
        idata = sample(nuts_sampler="nutpie")
    assert idata.sample_stats.attrs["inference_library"] == "nutpie"
    check_posterior(np.asarray(idata.posterior["mu"]))
