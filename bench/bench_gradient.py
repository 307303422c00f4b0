"""Derived gradients against hand-written ones and central differences, side by side in one run.

    python bench/bench_gradient.py [--reps 7] [--calls 2000] [--markdown]

The op is a 3-parameter ODE log-likelihood (logistic growth (r, K, y0), 200 Euler steps,
tests/python/data/gradient/logistic.c) written once with the DTYPE macros. Its twin has the same
forward code and a hand-written C gradient (forward sensitivities, logistic_grad.c). Rows, each
a ratio of medians measured in this run:

  * value and gradient, ``f(theta) -> (ll, dll/dtheta)`` compiled in CVM and in NUMBA: the
    derived gradient (the op's code on dual numbers, 3 tangents in one pass) against the
    hand-written one;
  * the same against central finite differences (the value and 6 more forward calls), with the
    largest relative error of each against the hand-written gradient;
  * the forward module: its cold build (a fresh cache) and its call, for the op whose gradient
    is derived and for its twin, which compile the same C code into the same module; and the
    derivative module's own cold build, which happens only when a gradient is first asked for.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from timefmt import fmt_time  # bench/ is the script's own folder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python" / "data" / "gradient"))


def per_call(f, args, calls: int, reps: int) -> float:
    """The median over `reps` runs of the mean time of one call, `calls` calls a run."""
    for _ in range(10):
        f(*args)
    runs = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(calls):
            f(*args)
        runs.append((time.perf_counter() - start) / calls)
    return statistics.median(runs)


def cold_build(make, reps: int) -> float:
    """The median time of `make()` on an empty cache (each in a fresh cache folder)."""
    times = []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as cache:
            os.environ["LIBSECTION_CACHE_DIR"] = cache
            start = time.perf_counter()
            make()
            times.append(time.perf_counter() - start)
    os.environ.pop("LIBSECTION_CACHE_DIR")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    import numpy as np
    import pytensor
    import pytensor.tensor as pt
    from gradient_ops import Logistic, LogisticHand, logistic_data

    from libsection.pytensor import pytensor_op

    obs = logistic_data()
    theta0 = np.array([0.7, 9.0, 0.6])
    theta = pt.tensor("theta", dtype="float64", shape=(3,))

    def value_and_gradient(op, mode):
        ll = pytensor_op(op)(theta, obs)
        return pytensor.function([theta], [ll, pt.grad(ll, theta)], mode=mode)

    rows: list[tuple[str, str, str, str]] = []
    exact = value_and_gradient(LogisticHand(), "CVM")(theta0)[1]
    for mode in ("CVM", "NUMBA"):
        derived = value_and_gradient(Logistic(), mode)
        hand = value_and_gradient(LogisticHand(), mode)
        t_derived = per_call(derived, (theta0,), args.calls, args.reps)
        t_hand = per_call(hand, (theta0,), args.calls, args.reps)
        error = np.max(np.abs(derived(theta0)[1] / exact - 1))
        rows.append(
            (
                f"value and gradient, {mode}: derived / hand-written C",
                fmt_time(t_derived),
                fmt_time(t_hand),
                f"{t_derived / t_hand:.2f}× (max rel. error {error:.1e})",
            )
        )
        value = pytensor.function([theta], pytensor_op(Logistic())(theta, obs), mode=mode)
        step = 1e-6

        def central(t, value=value):
            ll = value(t)
            grad = [(value(t + step * e) - value(t - step * e)) / (2 * step) for e in np.eye(3)]
            return ll, np.array(grad)

        t_central = per_call(central, (theta0,), max(args.calls // 4, 1), args.reps)
        fd_error = np.max(np.abs(central(theta0)[1] / exact - 1))
        rows.append(
            (
                f"value and gradient, {mode}: derived / central differences",
                fmt_time(t_derived),
                fmt_time(t_central),
                f"{t_derived / t_central:.2f}× (differences' max rel. error {fd_error:.1e})",
            )
        )

    def forward(op):
        return pytensor.function([theta], pytensor_op(op)(theta, obs), mode="CVM")

    build_derived = cold_build(lambda: forward(Logistic())(theta0), args.reps)
    build_hand = cold_build(lambda: forward(LogisticHand())(theta0), args.reps)
    rows.append(
        (
            "forward module, cold build: the op / its hand-written twin",
            fmt_time(build_derived),
            fmt_time(build_hand),
            f"{build_derived / build_hand:.2f}×",
        )
    )
    call_derived = per_call(forward(Logistic()), (theta0,), args.calls, args.reps)
    call_hand = per_call(forward(LogisticHand()), (theta0,), args.calls, args.reps)
    rows.append(
        (
            "forward call, CVM: the op / its hand-written twin",
            fmt_time(call_derived),
            fmt_time(call_hand),
            f"{call_derived / call_hand:.2f}×",
        )
    )
    build_gradient = cold_build(lambda: value_and_gradient(Logistic(), "CVM")(theta0), args.reps)
    rows.append(
        (
            "cold build of value and gradient (forward + derivative module) / forward alone",
            fmt_time(build_gradient),
            fmt_time(build_derived),
            f"{build_gradient / build_derived:.2f}×",
        )
    )

    header = ("what", "this", "against", "ratio")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        width = max(len(r[0]) for r in rows)
        for row in rows:
            print(f"{row[0]:<{width}}  {row[1]:>10}  {row[2]:>10}  {row[3]}")


if __name__ == "__main__":
    main()
