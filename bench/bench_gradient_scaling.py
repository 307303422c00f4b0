"""Derived gradients against hand-written reverse-mode C gradients as the number of differentiated
scalars grows, side by side in one run: issue 47's performance criteria in one command.

    python bench/bench_gradient_scaling.py [--sizes 100,1000,10000] [--modes CVM,NUMBA,JAX]
        [--cap 10] [--reps 3] [--draws 150] [--no-samplers] [--no-cold] [--markdown]

The kernels are real ones ported as an op author ports them (bench/kernels/gradient_kernels.py):
each op is written once with the DTYPE macros and no gradient, so libsection derives it, and its
twin runs the same C code with a hand-written reverse-mode gradient in C, the packages' way.
Rows, each timed for the derived gradient and the hand-written one in this run:

  * elementwise: Kepler's equation over N points, the value and gradient of
    sum(w_s sin f + w_c cos f) in M and e (2N differentiated scalars);
  * array op: a celerite GP log-likelihood over N points (one real and one complex term), its
    value and gradient in t, diag, y and the complex term's 4 coefficients (3N + 4 scalars);
  * few scalars: the same log-likelihood in the 4 coefficients only, t, diag and y given to the
    function as data (inputs not differentiated);
  each in CVM and NUMBA (``pytensor.function`` of ``[value, *pt.grad(value, wrt)]``) and in JAX
  (``jax.jit(jax.value_and_grad(f, argnums))`` of the graph's JAX conversion,
  ``get_jaxified_graph``, compiled ahead of the timed calls), at N = --sizes;
  * a PyMC radial-velocity model (60 points, 7 parameters, the Kepler op): CPU time per draw
    (one chain, warm-up included) and per gradient (leapfrog step) under nutpie and numpyro,
    compiled before the timed runs, fixed seeds, the best of --reps runs. The ratio per
    gradient is the one to compare: the two chains part after rounding differences, so their
    steps per draw differ;
  * cold: a fresh process with empty caches (libsection's and PyTensor's) to its first value
    and gradient in CVM (N = 200), imports and compilers included: the derived gradient (the
    op's module and its derivative module) against the hand-written one (the op's module and its
    gradient op's).

Times are CPU time (time.process_time: every thread of this process, not the other load of a
shared machine), the best of --reps interleaved repeats. A cell whose first call takes longer
than --cap seconds, or that the growth measured at the smaller sizes predicts will, is not
repeated: it reads "> cap" with that one call's time, or the prediction ("est."). Memory: the
rise of the process's peak RSS during a cell's warm call (Linux; the peak is reset before it),
and the most bytes the derived gradient's tape took in that call (entries and adjoints, as
libsection's runtime counts each reverse-mode pass: ``_core.tape_bytes``). The tape's storage
is kept between calls up to 64 MiB, so the RSS rise of a warm call does not show it.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from timefmt import ONE_BLAS_THREAD, children_cpu, fmt_time  # bench/ is the script's own folder

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "bench" / "kernels"
sys.path.insert(0, str(KERNELS))


# ---------------------------------------------------------------- memory


def tape_bytes(reset: bool = False) -> int | None:
    """The most bytes a derived gradient's tape took (its entries and adjoints) since the last
    reset, as libsection's runtime counts each reverse-mode pass (``_core.tape_bytes``); None
    when no call ran reverse mode (forward passes keep no tape, nor does a hand-written
    gradient)."""
    from libsection import _core

    return _core.tape_bytes(reset)[1] or None


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak_rss() -> int | None:
    """Resets the process's peak RSS (Linux's clear_refs) and returns the RSS now, in KiB;
    None where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return None
    return _status_kib("VmRSS")


def peak_rss_rise(start: int | None) -> int | None:
    """Bytes the peak RSS rose above `start` (KiB, from reset_peak_rss)."""
    peak = _status_kib("VmHWM")
    if start is None or peak is None:
        return None
    return max(peak - start, 0) * 1024


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "n/a"
    if n < 1 << 20:
        return f"{n / 1024:.0f} KiB"
    return f"{n / (1 << 20):.1f} MiB"


# ---------------------------------------------------------------- timing with a cap


@dataclass
class Timing:
    seconds: float | None  # per call; None when not run
    note: str = ""  # "> cap", "est.", how many calls
    memory: int | None = None
    tape: int | None = None

    def text(self) -> str:
        if self.note.startswith(">"):
            return f"{self.note} ({fmt_time(self.seconds)})"
        return fmt_time(self.seconds) + (f" ({self.note})" if self.note else "")


def first_calls(pair, cap: float) -> Timing:
    """A warm callable's ((run, fgraph)) first call, which may compile (Numba compiles on
    it), then a second: its time, peak RSS rise and tape. "> cap" when either exceeds `cap`."""
    run, _ = pair
    start = time.process_time()
    run()
    seconds = time.process_time() - start
    if seconds > cap:
        return Timing(seconds, f"> {cap:g} s")
    start_rss = reset_peak_rss()
    tape_bytes(reset=True)
    start = time.process_time()
    run()
    seconds = time.process_time() - start
    note = f"> {cap:g} s" if seconds > cap else ""
    return Timing(seconds, note, peak_rss_rise(start_rss), tape_bytes())


def measure_pair(derived, hand, cap: float, reps: int, predicted: float | None):
    """(derived, hand) Timings of two warm callables (each a (run, fgraph) pair): their first
    calls, then `reps` interleaved repeats of as many calls as fill a twentieth of a second. The
    derived one is not called when `predicted` (its time per call) exceeds `cap`, and repeated
    only while its calls fit in `cap`."""
    if predicted is not None and predicted > cap:
        d = Timing(predicted, f"> {cap:g} s est.")
    else:
        d = first_calls(derived, cap)
    h = first_calls(hand, cap)
    timed = [(hand[0], h)]
    if not d.note:
        if d.seconds * reps <= cap:
            timed.insert(0, (derived[0], d))
        else:
            d.note = "1 call"
    for _ in range(reps):
        for run, t in timed:
            number = max(1, min(2000, int(0.05 / max(t.seconds, 1e-7))))
            start = time.process_time()
            for _ in range(number):
                run()
            t.seconds = min(t.seconds, (time.process_time() - start) / number)
    return d, h


def predict(history: list[tuple[int, float]], n: int) -> float | None:
    """The derived gradient's time at size n from its times at the smaller sizes: the growth
    between the last two, as a power of N between 1 and 2 (2 with one size known)."""
    if not history:
        return None
    (n1, t1), (n2, t2) = (history[-2] if len(history) > 1 else (0, 0.0)), history[-1]
    power = 2.0 if n1 == 0 or t1 <= 0 else min(2.0, max(1.0, math.log(t2 / t1) / math.log(n2 / n1)))
    return t2 * (n / n2) ** power


# ---------------------------------------------------------------- the cases


@dataclass(eq=False)
class Case:
    """A value and its gradient: `graph(op, n)` gives (inputs, differentiated inputs, value)
    for op (derived or hand-written), `values(n)` the inputs' values."""

    name: str
    scalars: Callable[[int], int]
    ops: tuple
    graph: Callable
    values: Callable
    target: str  # issue 47's, for derived / hand-written


def kepler_graph(op, n):
    import numpy as np
    import pytensor.tensor as pt

    from libsection.pytensor import pytensor_op

    m = pt.tensor("m", dtype="float64", shape=(n,))
    e = pt.tensor("e", dtype="float64", shape=(n,))
    sin_f, cos_f = pytensor_op(op)(m, e)
    weights = np.random.default_rng(1).normal(size=(2, n))
    return [m, e], [m, e], (weights[0] * sin_f + weights[1] * cos_f).sum()


def celerite_graph(op, n, data_differentiated: bool):
    import numpy as np
    import pytensor.tensor as pt
    from gradient_kernels import celerite_coefficients

    from libsection.pytensor import pytensor_op

    a_real, c_real = celerite_coefficients(1, 1)[:2]
    coefficients = [pt.tensor(name, dtype="float64", shape=(1,)) for name in "abcd"]
    data = [pt.tensor(name, dtype="float64", shape=(n,)) for name in ("t", "diag", "y")]
    ll = pytensor_op(op)(np.array(a_real), np.array(c_real), *coefficients, *data)
    inputs = coefficients + data
    return inputs, inputs if data_differentiated else coefficients, ll


def celerite_values(n):
    from gradient_kernels import celerite_coefficients, celerite_data

    return [*celerite_coefficients(1, 1)[2:], *celerite_data(n)]


def cases() -> list[Case]:
    from gradient_kernels import Celerite, CeleriteHand, Kepler, KeplerHand, kepler_inputs

    return [
        Case(
            "elementwise: Kepler, in M and e",
            lambda n: 2 * n,
            (Kepler(), KeplerHand()),
            kepler_graph,
            lambda n: list(kepler_inputs(n)),
            "≤ 2×",
        ),
        Case(
            "array op: celerite, in t, diag, y and 4 coefficients",
            lambda n: 3 * n + 4,
            (Celerite(), CeleriteHand()),
            lambda op, n: celerite_graph(op, n, True),
            celerite_values,
            "≤ 2×",
        ),
        Case(
            "few scalars: celerite, in 4 coefficients (t, diag, y data)",
            lambda n: 4,
            (Celerite(), CeleriteHand()),
            lambda op, n: celerite_graph(op, n, False),
            celerite_values,
            "≤ 1.2× (today's)",
        ),
    ]


def compiled(case: Case, op, n: int, mode: str):
    """A warm-to-be callable computing the case's value and gradient in `mode`, and the
    FunctionGraph it runs."""
    import pytensor
    import pytensor.tensor as pt

    inputs, wrt, value = case.graph(op, n)
    values = case.values(n)
    if mode != "JAX":
        f = pytensor.function(inputs, [value, *pt.grad(value, wrt)], mode=mode)
        return (lambda: f(*values)), f.maker.fgraph
    import jax
    from pymc.sampling.jax import get_jaxified_graph
    from pytensor.graph.fg import FunctionGraph

    fn = get_jaxified_graph(inputs=inputs, outputs=[value])
    argnums = tuple(inputs.index(x) for x in wrt)
    step = jax.jit(jax.value_and_grad(lambda *args: fn(*args)[0], argnums=argnums))
    arrays = [jax.numpy.asarray(v) for v in values]
    ahead = step.lower(*arrays).compile()
    return (lambda: jax.block_until_ready(ahead(*arrays))), FunctionGraph(inputs, [value])


def scaling_rows(args) -> list[tuple]:
    rows = []
    for case in cases():
        for mode in args.modes:
            history: list[tuple[int, float]] = []
            for n in args.sizes:
                predicted = predict(history, n)
                skip = predicted is not None and predicted > args.cap
                derived_run = None if skip else compiled(case, case.ops[0], n, mode)
                hand_run = compiled(case, case.ops[1], n, mode)
                derived, hand = measure_pair(derived_run, hand_run, args.cap, args.reps, predicted)
                if not derived.note.startswith(">"):
                    history.append((n, derived.seconds))
                rows.append((case, n, mode, derived, hand))
                print(f"  {case.name}, N = {n:,}, {mode}: {derived.text()} / {hand.text()}",
                      file=sys.stderr, flush=True)  # fmt: skip
    return rows


# ---------------------------------------------------------------- PyMC, nutpie and numpyro


def nutpie_per_draw(model, draws: int, seed: int, reps: int) -> tuple[float, float]:
    """CPU time per draw (tune included) and per leapfrog step of one nutpie chain (its Numba
    backend), compiled and run once before; the best of `reps` runs, since the thread that
    waits for the chain's adds its own CPU time."""
    import nutpie

    sampler = nutpie.compile_pymc_model(model)
    nutpie.sample(sampler, draws=10, tune=10, chains=1, cores=1, seed=seed, progress_bar=False)
    per_draw = per_step = math.inf
    for _ in range(reps):
        start = time.process_time()
        trace = nutpie.sample(
            sampler, draws=draws, tune=draws, chains=1, cores=1, seed=seed, progress_bar=False,
            save_warmup=True,
        )  # fmt: skip
        cpu = time.process_time() - start
        steps = sum(int(trace[group]["n_steps"].sum()) for group in NUTPIE_STATS)
        per_draw, per_step = min(per_draw, cpu / (2 * draws)), min(per_step, cpu / steps)
    return per_draw, per_step


NUTPIE_STATS = ("sample_stats", "warmup_sample_stats")


def numpyro_per_draw(model, draws: int, seed: int, reps: int) -> tuple[float, float]:
    """CPU time per draw (tune included) and per leapfrog step of one numpyro NUTS chain on the
    model's JAX log-density (PyMC's get_jaxified_logp, as pm.sample's numpyro sampler runs it):
    the kernel's steps in one jitted scan, as numpyro's MCMC runs them, compiled by a first
    run, then the best of `reps` runs from the same state."""
    import jax
    import numpy as np
    from numpyro.infer import NUTS
    from pymc.sampling.jax import get_jaxified_logp

    # negative_logp=False is PyMC's flag for the potential, -log p (as its numpyro sampler)
    kernel = NUTS(potential_fn=get_jaxified_logp(model, negative_logp=False))
    init = [np.asarray(v) for v in model.initial_point().values()]
    state = kernel.init(jax.random.PRNGKey(seed), draws, init, (), {})

    def step(s, _):
        s = kernel.sample(s, (), {})
        return s, s.num_steps

    chain = jax.jit(lambda s: jax.lax.scan(step, s, None, length=2 * draws))
    jax.block_until_ready(chain(state))
    per_draw = per_step = math.inf
    for _ in range(reps):
        start = time.process_time()
        _, steps = jax.block_until_ready(chain(state))
        cpu = time.process_time() - start
        per_draw, per_step = min(per_draw, cpu / (2 * draws)), min(per_step, cpu / int(steps.sum()))
    return per_draw, per_step


def sampler_rows(draws: int, reps: int) -> list[tuple]:
    from gradient_kernels import Kepler, KeplerHand, rv_data, rv_model

    data = rv_data()
    rows = []
    for sampler, per_draw, mode in (
        ("nutpie", nutpie_per_draw, "NUMBA"),
        ("numpyro", numpyro_per_draw, "JAX"),
    ):
        results = [
            per_draw(rv_model(op, *data), draws, 47, reps) for op in (Kepler(), KeplerHand())
        ]
        for k, (what, target) in enumerate((("draw", ""), ("gradient (leapfrog step)", "≤ 1.5×"))):
            label = f"PyMC RV model, 60 points, {sampler}: CPU per {what}"
            rows.append((label, results[0][k], results[1][k], mode, target))
        print(f"  {sampler}: {rows[-1][1:3]}", file=sys.stderr, flush=True)
    return rows


# ---------------------------------------------------------------- cold processes

COLD = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, pytensor, pytensor.tensor as pt
import gradient_kernels as k
from libsection.pytensor import pytensor_op
n = 200
if sys.argv[2] == "kepler":
    m, e = pt.dvector("m"), pt.dvector("e")
    ins, values = [m, e], k.kepler_inputs(n)
    s, c = pytensor_op(getattr(k, sys.argv[3])())(m, e)
    out = (s + c).sum()
else:
    ins = [pt.dvector(x) for x in k.CELERITE_INPUTS + k.CELERITE_DATA]
    values = (*k.celerite_coefficients(1, 1), *k.celerite_data(n))
    out = pytensor_op(getattr(k, sys.argv[3])())(*ins)
print(pytensor.function(ins, [out, *pt.grad(out, ins)], mode="CVM")(*values)[0])
"""


def cold_rows(tmp: Path) -> list[tuple]:
    rows = []
    for kernel, derived, hand in (
        ("kepler", "Kepler", "KeplerHand"),
        ("celerite", "Celerite", "CeleriteHand"),
    ):
        cpu = []
        for name in (derived, hand):
            env = dict(os.environ, **ONE_BLAS_THREAD)
            env["LIBSECTION_CACHE_DIR"] = str(tmp / f"cache-{name}")
            env["PYTENSOR_FLAGS"] = f"compiledir={tmp / f'pytensor-{name}'}"
            start = children_cpu()
            done = subprocess.run(
                [sys.executable, "-c", COLD, str(KERNELS), kernel, name],
                env=env, capture_output=True, text=True,
            )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"benchmark process failed:\n{done.stderr[-3000:]}")
            cpu.append(children_cpu() - start)
        rows.append(
            (f"cold process to the first value and gradient, {kernel}, CVM", *cpu, "CVM", "")
        )
    return rows


# ---------------------------------------------------------------- the report


def print_table(header: tuple, body: list[tuple], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in body:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(r[k]) for r in [header, *body]) for k in range(len(header))]
        for row in [header, *body]:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print()


def ratio_text(d: Timing, h: Timing) -> str:
    if d.seconds is None or h.seconds is None:
        return ""
    return ("> " if d.note.startswith(">") else "") + f"{d.seconds / h.seconds:,.1f}×"


def print_tables(scaling: list[tuple], others: list[tuple], args) -> None:
    """Every cell, then the ratios in the shape of issue 47's table, beside its targets."""
    header = ("what", "N", "scalars", "mode", "derived", "hand-written", "derived / hand",
              "peak RSS rise, derived / hand", "tape")  # fmt: skip
    body = [
        (case.name, f"{n:,}", f"{case.scalars(n):,}", mode, d.text(), h.text(), ratio_text(d, h),
         f"{fmt_bytes(d.memory)} / {fmt_bytes(h.memory)}", fmt_bytes(d.tape))
        for case, n, mode, d, h in scaling
    ]  # fmt: skip
    for label, d, h, _, _ in others:
        body.append((label, "", "", "", fmt_time(d), fmt_time(h), f"{d / h:,.2f}×", "", ""))
    print_table(header, body, args.markdown)

    header = ("derived / hand-written", "N", *args.modes, "target")
    body = []
    for case in dict.fromkeys(row[0] for row in scaling):
        ratios = {
            mode: " / ".join(
                ratio_text(d, h) for c, _, m, d, h in scaling if c is case and m == mode
            )
            for mode in args.modes
        }
        sizes = " / ".join(f"{n:,}" for n in args.sizes)
        body.append((case.name, sizes, *ratios.values(), case.target))
    for label, d, h, mode, target in others:
        if target:
            ratio = f"{d / h:,.1f}×"
            cells = [ratio if m == mode else "" for m in args.modes]
            if mode not in args.modes:  # its sampler's backend (nutpie's NUMBA) not measured
                label += f" ({mode}): {ratio}"
            body.append((label, "", *cells, target))
    print_table(header, body, args.markdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--modes", default="CVM,NUMBA,JAX")
    parser.add_argument("--cap", type=float, default=10.0, help="seconds per cell's calls")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--draws", type=int, default=150, help="draws (and as many tune) per chain")
    parser.add_argument("--no-samplers", action="store_true")
    parser.add_argument("--no-cold", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    args, _ = parser.parse_known_args()  # ./dev bench hands every benchmark the same options
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.modes = args.modes.split(",")

    with tempfile.TemporaryDirectory(prefix="bench-gradient-scaling-") as tmp:
        os.environ.setdefault("LIBSECTION_CACHE_DIR", str(Path(tmp) / "cache"))
        run(args, Path(tmp))


def run(args, tmp: Path) -> None:
    """Every row, then the tables; `tmp` holds the compile caches (gone afterwards)."""
    warnings.simplefilter("ignore")
    import pytensor

    versions = f"PyTensor {pytensor.__version__}"
    if "JAX" in args.modes or not args.no_samplers:  # numpyro runs on JAX
        import jax

        jax.config.update("jax_enable_x64", True)
        versions += f", JAX {jax.__version__}"
    scaling = scaling_rows(args)
    others = [] if args.no_samplers else sampler_rows(args.draws, args.reps)
    if not args.no_cold:
        others += cold_rows(tmp)
    print(
        f"{versions}; CPU time per call, best of {args.reps} interleaved repeats; "
        f"cap {args.cap:g} s a cell"
    )
    print_tables(scaling, others, args)


if __name__ == "__main__":
    main()
