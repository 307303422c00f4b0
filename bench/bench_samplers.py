"""Sampler benchmark: a PyMC model whose likelihood is a drop-in C op, beside the same model
written with PyTensor built-ins, sampled warm by every sampler in one run.

    python bench/bench_samplers.py [--quick]

The model (issue #20's custom log-density): mu ~ Normal(0, 10), and a unit-variance Gaussian
log-likelihood of 10^4 data points around mu, as the C op GaussLogLike (its gradient another C
op; both release the GIL around their loops) or as `-0.5 * ((y - mu) ** 2).sum()`.

Rows, wall time of sampling (2 chains):
  * nutpie, compiled once, then sampled with cores=1 and cores=2: each model's speed-up from
    the second core (issue #20: the op's within 10% of the built-in's);
  * pm.sample with PyMC's NUTS, numpyro and blackjax: the second of two runs (the first pays
    for compiling), the op against the built-in (target <= 1.1x for numpyro and blackjax).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))  # the test ops, with their C files


def models(n_points: int):
    import numpy as np
    import pymc as pm
    from backend_ops import GaussLogLike

    y = np.random.default_rng(1).normal(1.5, 1.0, size=n_points)
    built = {}
    for name in ("C op", "built-in"):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0, 10)
            if name == "C op":
                pm.Potential("likelihood", GaussLogLike()(y, mu))
            else:
                pm.Potential("likelihood", -0.5 * ((y - mu) ** 2).sum())
        built[name] = model
    return built


def wall(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer draws and points")
    args, _ = parser.parse_known_args()  # ./dev bench hands every benchmark the same options

    import os

    os.environ.setdefault("LIBSECTION_CACHE_DIR", tempfile.mkdtemp(prefix="bench-samplers-"))
    warnings.simplefilter("ignore")
    import nutpie
    import pymc as pm

    draws, tune = (300, 300) if args.quick else (1000, 1000)
    built = models(10**4)
    rows = []

    speedups = {}
    for name, model in built.items():
        compiled = nutpie.compile_pymc_model(model)
        times = {}
        for cores in (1, 2, 1, 2):  # interleaved, the best of two each
            seconds = wall(
                lambda cores=cores: nutpie.sample(
                    compiled, draws=draws, tune=tune, chains=2, cores=cores, seed=3,
                    progress_bar=False,
                )
            )  # fmt: skip
            times[cores] = min(times.get(cores, float("inf")), seconds)
        speedups[name] = times[1] / times[2]
        rows.append((f"nutpie, 2 chains, cores=1 ({name})", times[1]))
        rows.append((f"nutpie, 2 chains, cores=2 ({name})", times[2]))

    for sampler in ("pymc", "numpyro", "blackjax"):
        for name, model in built.items():
            kwargs = {}
            if sampler != "pymc":
                kwargs["nuts_sampler_kwargs"] = {"chain_method": "vectorized"}
            seconds = []
            for _ in range(2):
                with model:
                    seconds.append(
                        wall(
                            lambda kwargs=kwargs: pm.sample(
                                draws=draws, tune=tune, chains=2, cores=1, random_seed=3,
                                progressbar=False, compute_convergence_checks=False,
                                nuts_sampler=sampler, **kwargs,
                            )
                        )
                    )  # fmt: skip
            rows.append((f"pm.sample, {sampler}, second run ({name})", seconds[1]))

    print(f"PyMC {pm.__version__}, nutpie {nutpie.__version__}, {draws} draws + {tune} tune")
    print("measure | wall")
    for label, seconds in rows:
        print(f"{label} | {seconds:.2f} s")
    by_label = dict(rows)
    print()
    print("ratio | value | target")
    op_speedup, builtin_speedup = speedups["C op"], speedups["built-in"]
    print(
        f"nutpie speed-up from the second core, op / built-in | {op_speedup:.2f}x / "
        f"{builtin_speedup:.2f}x = {op_speedup / builtin_speedup:.2f} | >= 0.9"
    )
    for sampler in ("pymc", "numpyro", "blackjax"):
        op = by_label[f"pm.sample, {sampler}, second run (C op)"]
        builtin = by_label[f"pm.sample, {sampler}, second run (built-in)"]
        target = "<= 1.1x" if sampler != "pymc" else ""
        print(f"pm.sample {sampler}, op / built-in | {op / builtin:.2f}x | {target}")


if __name__ == "__main__":
    main()
