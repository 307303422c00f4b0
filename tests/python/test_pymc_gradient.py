"""The real clients of derived gradients: a PyMC model whose likelihood is an ODE written once in
C (tests/python/data/gradient/logistic.c, no gradient of its own), sampled with nutpie (Numba)
and numpyro (JAX), against the same model with the op's hand-written C gradient.

With the same seed, a sampler given gradients equal to rounding takes the same path for a
while, and the two posteriors agree far within Monte Carlo error; both also recover the
parameters the data were simulated from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pm = pytest.importorskip(
    "pymc", reason="PyMC is installed on the py312 stack only (deps/stack-py312.txt)"
)
import pytensor.tensor as pt  # noqa: E402

from libsection.pytensor import pytensor_op  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "data" / "gradient"))
from gradient_ops import Logistic, LogisticHand, logistic_data  # noqa: E402

OBS = logistic_data(n=200)
TRUTH = {"r": 0.8, "K": 10.0, "y0": 0.5}
CHAINS, DRAWS, TUNE = 2, 300, 300

pytestmark = pytest.mark.usefixtures("cache_dir")


def model(op) -> pm.Model:
    with pm.Model() as m:
        r = pm.LogNormal("r", mu=np.log(1.0), sigma=0.5)
        k = pm.LogNormal("K", mu=np.log(8.0), sigma=0.5)
        y0 = pm.LogNormal("y0", mu=np.log(1.0), sigma=0.5)
        pm.Potential("likelihood", pytensor_op(op)(pt.stack([r, k, y0]), OBS))
    return m


def posterior(op, sampler: str) -> dict[str, np.ndarray]:
    # numpyro's chains under jax.vmap, on one device: its default ("parallel", jax.pmap) needs
    # a device per chain, which a process has only when importing pymc.sampling.jax set XLA's
    # host device count before JAX started (not after an earlier test started it: numpyro then
    # warns, an error under the suite's warning filter).
    kwargs = {"nuts": {"chain_method": "vectorized"}} if sampler == "numpyro" else {}
    with model(op):
        idata = pm.sample(
            draws=DRAWS,
            tune=TUNE,
            chains=CHAINS,
            cores=1,
            random_seed=7,
            progressbar=False,
            nuts_sampler=sampler,
            compute_convergence_checks=False,
            **kwargs,
        )
    return {name: np.asarray(idata.posterior[name]) for name in TRUTH}


def test_the_models_gradient_is_the_hand_written_one():
    point = {"r_log__": np.log(0.9), "K_log__": np.log(9.5), "y0_log__": np.log(0.55)}
    derived = model(Logistic()).compile_dlogp()(point)
    hand = model(LogisticHand()).compile_dlogp()(point)
    np.testing.assert_allclose(derived, hand, rtol=1e-9)


@pytest.mark.parametrize("sampler", ["nutpie", "numpyro"])
def test_posterior_with_the_derived_gradient_is_the_hand_written_ones(sampler):
    pytest.importorskip(sampler)
    derived = posterior(Logistic(), sampler)
    hand = posterior(LogisticHand(), sampler)
    for name, truth in TRUTH.items():
        d, h = derived[name], hand[name]
        assert d.size == CHAINS * DRAWS
        # Monte Carlo error of a mean, allowing for an ESS of a quarter of the draws.
        mc_error = h.std() / np.sqrt(h.size / 4)
        assert abs(d.mean() - h.mean()) < 2 * mc_error, (name, d.mean(), h.mean(), mc_error)
        assert abs(d.std() / h.std() - 1) < 0.25, (name, d.std(), h.std())
        assert abs(d.mean() - truth) < 5 * d.std(), (name, d.mean(), truth)
