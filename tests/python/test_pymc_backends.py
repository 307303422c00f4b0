"""PyMC end to end: one model whose likelihood is a drop-in op with a C gradient
(backend_ops.GaussLogLike), sampled by PyMC's own NUTS (Numba), nutpie (Numba), numpyro and
blackjax (JAX). Each posterior mean must match the analytic one.

The model: mu ~ Normal(0, 10), y_i ~ Normal(mu, 1) for 20 data points, so the posterior of mu is
Normal(sum(y) / (n + 1/100), 1 / sqrt(n + 1/100)). The tolerance is five Monte Carlo standard
errors (posterior sd / sqrt(effective sample size), the ESS measured on the draws): a correct
sampler fails it with probability below 1e-6, while a wrong likelihood or gradient moves the mean
by far more.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pm = pytest.importorskip("pymc")  # the py312 stack pins it
import arviz as az
from backend_ops import GaussLogLike

N = 20
Y = np.random.default_rng(42).normal(1.5, 1.0, size=N)
PRECISION = N + 1 / 10**2
POSTERIOR_MEAN = Y.sum() / PRECISION
POSTERIOR_SD = 1 / np.sqrt(PRECISION)

# PyMC 6 runs nutpie when `nuts_sampler` is not given and nutpie is installed: name "pymc".
SAMPLERS = ["pymc", "nutpie", "numpyro", "blackjax"]
NEEDS = {"nutpie": "nutpie", "numpyro": "numpyro", "blackjax": "blackjax"}


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sampler_recovers_the_analytic_posterior(sampler, cache_dir):
    if sampler in NEEDS:
        pytest.importorskip(NEEDS[sampler])
    with pm.Model():
        mu = pm.Normal("mu", 0, 10)
        pm.Potential("likelihood", GaussLogLike()(Y, mu))
        kwargs = {"nuts_sampler": sampler}
        if sampler in ("numpyro", "blackjax"):
            # Chains under jax.vmap (the op's batched callback); "parallel" is jax.pmap, which
            # needs a device per chain.
            kwargs["nuts"] = {"chain_method": "vectorized"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyMC's notes on Potential, chain methods, ...
            warnings.filterwarnings("error", message=".*object mode.*")
            idata = pm.sample(
                draws=1000,
                tune=500,
                chains=2,
                random_seed=7,
                progressbar=False,
                compute_convergence_checks=False,
                **kwargs,
            )
    check_posterior(idata, sampler)


def check_posterior(idata, sampler: str) -> None:
    draws = idata.posterior["mu"].values.ravel()
    ess = float(az.ess(idata, var_names=["mu"])["mu"])
    assert ess > 200, f"{sampler}: effective sample size {ess:.0f} is too small to judge"
    tolerance = 5 * POSTERIOR_SD / np.sqrt(ess)
    assert abs(draws.mean() - POSTERIOR_MEAN) < tolerance, (
        f"{sampler}: posterior mean {draws.mean():.4f}, analytic {POSTERIOR_MEAN:.4f} "
        f"(tolerance {tolerance:.4f}, ESS {ess:.0f})"
    )
    assert abs(draws.std() / POSTERIOR_SD - 1) < 0.15, (
        f"{sampler}: posterior sd {draws.std():.4f}, analytic {POSTERIOR_SD:.4f}"
    )


def test_nutpie_chains_run_a_gil_releasing_op_at_once(cache_dir):
    # nutpie's chains call one compiled Numba function from threads of their own. The op
    # releases the GIL, so a chain that finds the node's instance busy runs a spare: the first
    # calls of two chains meet inside the op (its C code waits for that), and the posterior is
    # still right.
    pytest.importorskip("nutpie")
    import threading

    from backend_ops import GaussLogLikeMeeting

    state = np.array([threading.get_native_id(), 0, 0], dtype=np.int64)
    with pm.Model():
        mu = pm.Normal("mu", 0, 10)
        pm.Potential("likelihood", GaussLogLikeMeeting(state)(Y, mu))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyMC's notes on Potential
            idata = pm.sample(
                draws=1000,
                tune=500,
                chains=2,
                cores=2,
                nuts_sampler="nutpie",
                random_seed=7,
                progressbar=False,
                compute_convergence_checks=False,
            )
    assert idata.sample_stats.attrs["inference_library"] == "nutpie"
    assert state[1] >= 2 and state[2] == 1, state  # two chains' threads met inside the op
    check_posterior(idata, "nutpie")


@pytest.mark.parametrize("sampler", ["numpyro", "blackjax"])
def test_jax_samplers_run_the_c_code_inside_xla_with_undefined_data_gradients(sampler, cache_dir):
    # PyMC's black-box likelihood: no gradient for the data input. The JAX samplers ask for the
    # gradient of every float input; the op runs as an XLA FFI call, never a host callback.
    pytest.importorskip(sampler)
    from backend_ops import GaussLogLikeNoDataGrad
    from test_jax_ffi import PythonFrames

    if not hasattr(__import__("sys"), "monitoring"):
        pytest.skip("sys.monitoring is new in Python 3.12")
    with pm.Model():
        mu = pm.Normal("mu", 0, 10)
        pm.Potential("likelihood", GaussLogLikeNoDataGrad()(Y, mu))
        with warnings.catch_warnings(), PythonFrames() as frames:
            warnings.simplefilter("ignore")
            idata = pm.sample(
                draws=1000,
                tune=500,
                chains=2,
                random_seed=11,
                progressbar=False,
                compute_convergence_checks=False,
                nuts_sampler=sampler,
                nuts={"chain_method": "vectorized"},
            )
    callbacks = [s for s in frames.seen if s.endswith((":host", ":run_once"))]
    assert callbacks == [], f"{sampler} ran the op through a host callback: {callbacks[:3]}"
    draws = idata.posterior["mu"].values.ravel()
    ess = float(az.ess(idata, var_names=["mu"])["mu"])
    assert ess > 200
    assert abs(draws.mean() - POSTERIOR_MEAN) < 5 * POSTERIOR_SD / np.sqrt(ess)
