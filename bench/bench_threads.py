"""Threads benchmark (issue 50): ops written as PyTensor users write them (no
Py_BEGIN_ALLOW_THREADS), whose code the linker runs without the GIL, side by side in one run.

    python bench/bench_threads.py [--quick]

Rows:
  * nutpie's speed-up from more cores, wall time of sampling (best of two interleaved runs
    each): the density model (mu ~ Normal(0, 10), a unit-variance Gaussian log-likelihood of
    10^5 points) with its likelihood and gradient as C ops written as users write them
    (tests/python/data/threads/gauss_loglike_as_written.c and its gradient), against the same
    model in built-ins and with the ops that release the GIL themselves (backend_ops'
    GaussLogLike): 2 chains from cores=1 to cores=2, and 4 chains from cores=1 to the
    machine's cores. Target: the op's speed-up within 10% of the built-in's.
  * a single thread's calls against the same op keeping the GIL (`release_gil = False`, what
    every op did before): VecMul (tests/python/data/backends/vec_mul.c, its output allocated
    the classic way and reused) on 3 and 10^6 elements, called as `build()`'s op, through
    PyTensor functions in CVM, NUMBA and JAX, and as the Numba function nutpie calls. Alone in
    the process (the GIL is never given up: no other thread could take it), and with one idle
    thread (a notebook's kernel has several), where it is given up and taken back on each
    call. CPU time per call (time.process_time), best of interleaved repeats. Target: <= 1.0x.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from bench_samplers import wall  # bench/ is the script's own folder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))  # the test ops, with their C files
os.chdir(ROOT / "tests" / "python")  # the drop-ins' files are relative to it


def density_models(n_points: int) -> dict:
    import numpy as np
    import pymc as pm
    from backend_ops import GaussLogLike
    from threads_ops import GaussLogLikeAsWritten

    y = np.random.default_rng(1).normal(1.5, 1.0, size=n_points)
    likelihoods = {
        "op as written": lambda mu: GaussLogLikeAsWritten()(y, mu),
        "op releasing the GIL itself": lambda mu: GaussLogLike()(y, mu),
        "built-in": lambda mu: -0.5 * ((y - mu) ** 2).sum(),
    }
    built = {}
    for name, likelihood in likelihoods.items():
        with pm.Model() as model:
            mu = pm.Normal("mu", 0, 10)
            pm.Potential("likelihood", likelihood(mu))
        built[name] = model
    return built


def nutpie_speedups(built: dict, chains: int, cores: int, draws: int, tune: int) -> dict:
    """Each model's wall time with cores=1 and cores=`cores` (interleaved, best of two)."""
    import nutpie

    compiled = {name: nutpie.compile_pymc_model(model) for name, model in built.items()}
    times: dict = {}
    for _ in range(2):
        for name, model in compiled.items():
            for c in (1, cores):
                seconds = wall(
                    lambda model=model, c=c: nutpie.sample(
                        model, draws=draws, tune=tune, chains=chains, cores=c, seed=3,
                        progress_bar=False,
                    )
                )  # fmt: skip
                key = (name, c)
                times[key] = min(times.get(key, float("inf")), seconds)
    return {name: (times[(name, 1)], times[(name, cores)]) for name in built}


def per_call(call, repeats: int, seconds: float = 0.05) -> list[float]:
    """CPU seconds per call of `call`, one figure per repeat (each ~`seconds` long)."""
    n = 1
    while True:  # calls per repeat
        start = time.process_time()
        for _ in range(n):
            call()
        if time.process_time() - start > seconds / 10 or n > 10**7:
            break
        n *= 10
    n = max(1, int(n * seconds / max(time.process_time() - start, 1e-9)))
    out = []
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(n):
            call()
        out.append((time.process_time() - start) / n)
    return out


def call_pairs(size: int) -> dict:
    """(released, kept) calls of VecMul on `size` elements, per door."""
    import numpy as np
    import pytensor
    import pytensor.tensor as pt
    from backend_ops import VecMul
    from threads_ops import VecMulKept

    import libsection

    x, y = np.linspace(0, 1, size), np.linspace(1, 2, size)
    pairs = {}
    built = [
        libsection.build(
            "data/backends/vec_mul.c",
            func_name="APPLY_SPECIFIC(vec_mul)",
            inputs=["float64[:]", "float64[:]"],
            outputs=["float64[:]"],
            release_gil=release,
        )
        for release in (True, False)
    ]
    pairs["build()'s op"] = tuple(lambda op=op: op(x, y) for op in built)
    a, b = pt.dvector("a"), pt.dvector("b")
    for mode in ("CVM", "NUMBA"):
        fns = [pytensor.function([a, b], op()(a, b), mode=mode) for op in (VecMul, VecMulKept)]
        pairs[f"PyTensor function, {mode}"] = tuple(lambda f=f: f(x, y) for f in fns)
    jits = [
        pytensor.function([a, b], op()(a, b), mode="NUMBA").vm.jit_fn for op in (VecMul, VecMulKept)
    ]
    pairs["Numba function (nutpie's call)"] = tuple(lambda f=f: f(x, y) for f in jits)
    try:
        import jax
        from threads_ops import jax_function
    except ImportError:
        return pairs
    jitted = [jax.jit(jax_function([a, b], [op()(a, b)])) for op in (VecMul, VecMulKept)]
    pairs["JAX jit"] = tuple(lambda f=f: f(x, y).block_until_ready() for f in jitted)
    return pairs


def call_costs(repeats: int) -> list[tuple[str, float, float, float]]:
    """(row, released, kept, ratio) for each door and size, alone and with an idle thread."""
    rows = []
    pairs = {size: call_pairs(size) for size in (3, 10**6)}
    for situation in ("alone", "one idle thread"):
        if situation == "one idle thread":
            idle = threading.Event()
            threading.Thread(target=idle.wait, daemon=True).start()
        for size, doors in pairs.items():
            for door, (released, kept) in doors.items():
                best = {"released": float("inf"), "kept": float("inf")}
                for _ in range(repeats):  # interleaved: the machine's load hits both alike
                    best["released"] = min(best["released"], *per_call(released, 1))
                    best["kept"] = min(best["kept"], *per_call(kept, 1))
                label = f"{door}, {'3' if size == 3 else '10^6'} elements, {situation}"
                rows.append(
                    (label, best["released"], best["kept"], best["released"] / best["kept"])
                )
    return rows


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.3f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer draws and repeats")
    args, _ = parser.parse_known_args()  # ./dev bench hands every benchmark the same options

    os.environ.setdefault("LIBSECTION_CACHE_DIR", tempfile.mkdtemp(prefix="bench-threads-"))
    warnings.simplefilter("ignore")
    import nutpie
    import pymc as pm

    draws, tune = (300, 300) if args.quick else (1000, 1000)
    cpus = os.cpu_count() or 1
    load = os.getloadavg()[0]
    print(f"PyMC {pm.__version__}, nutpie {nutpie.__version__}, {cpus} CPUs, load {load:.1f}")
    print()
    print("nutpie, density 10^5 | cores=1 | more cores | speed-up | / built-in's (target >= 0.9)")
    built = density_models(10**5)
    for chains, cores in ((2, 2), (4, cpus)):
        speedups = nutpie_speedups(built, chains, cores, draws, tune)
        builtin = speedups["built-in"][0] / speedups["built-in"][1]
        for name, (one, more) in speedups.items():
            up = one / more
            print(
                f"{chains} chains, cores=1 -> {cores}, {name} | {one:.2f} s | {more:.2f} s | "
                f"{up:.2f}x | {up / builtin:.2f}"
            )
    print()
    print("single call | released | GIL kept | ratio (target <= 1.0)")
    for label, released, kept, ratio in call_costs(3 if args.quick else 7):
        print(f"{label} | {fmt(released)} | {fmt(kept)} | {ratio:.3f}")
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
