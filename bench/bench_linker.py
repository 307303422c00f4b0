"""Linker-core benchmark: libsection against the installed PyTensor, side by side in one run.

    python bench/bench_linker.py [--reps 3]     (in a venv with libsection installed: ./dev bench)

Measures, for the tutorial's VectorTimesVector op (builds in CPU time, the compilers' included):
  * cold build of the op module, each tool's one-time setup already done (fresh process each),
    and the same op declared C (`build(..., language="c")`, the same file);
  * the first build ever: a whole process with fresh caches, one-time setup and imports included;
  * a new process loading the cached op;
  * calls at n = 1, 10^3, 10^6 against NumPy `x * y` and PyTensor `f(x, y)`;
  * two processes building two different ops at once, against one alone;
  * memory growth over 10^6 calls (success and failure paths).
Every cold build uses a variant of the op file (a different trailing comment), so both tools
really compile, while their one-time setup (PyTensor's helper modules, libsection's
precompiled header and compiler identity) is done once beforehand. Prints a table of ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from timefmt import CPU_NOW, ONE_BLAS_THREAD, children_cpu, fmt_time  # bench/: this folder

ROOT = Path(__file__).resolve().parent.parent
VTV_SOURCE = ROOT / "ops" / "vector_times_vector" / "vectorTimesVector.c"
FUNC = "APPLY_SPECIFIC(vector_times_vector)"

# ---- code run in fresh processes --------------------------------------------------------------

PYTENSOR_BUILD = (
    CPU_NOW
    + """
import sys, time, json
import numpy as np
import pytensor, pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.link.c.op import ExternalCOp

class VectorTimesVector(ExternalCOp):
    __props__ = ()
    def __init__(self, path):
        super().__init__([path], "APPLY_SPECIFIC(vector_times_vector)")
    def make_node(self, x, y):
        return Apply(self, [x, y], [pt.TensorType("float64", shape=(None,))()])
    def perform(self, node, inputs, outputs):
        raise NotImplementedError

start, cpu_start = time.perf_counter(), cpu_now()
x, y = pt.dvector("x"), pt.dvector("y")
f = pytensor.function([x, y], VectorTimesVector(sys.argv[1])(x, y), mode="CVM")
seconds = time.perf_counter() - start
cpu = cpu_now() - cpu_start
a = np.arange(10.0)
assert np.array_equal(f(a, a), a * a)
print(json.dumps({"seconds": seconds, "cpu": cpu}))
"""
)

LIBSECTION_BUILD = (
    CPU_NOW
    + """
import sys, time, json
import numpy as np
from libsection._build import build

start, cpu_start = time.perf_counter(), cpu_now()
f = build(sys.argv[1], "APPLY_SPECIFIC(vector_times_vector)", inputs=["float64[:]"] * 2,
          outputs=["float64[:]"], name="VectorTimesVector", language=sys.argv[2])
seconds = time.perf_counter() - start
cpu = cpu_now() - cpu_start
a = np.arange(10.0)
assert np.array_equal(f(a, a), a * a)
print(json.dumps({"seconds": seconds, "cpu": cpu, "compiled": f.info["compiled"]}))
"""
)


def run_fresh(code: str, path: Path, env: dict, language: str = "c++") -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), language],
        env=env,
        text=True,
        capture_output=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


class Variants:
    """Copies of the op file that differ only in a trailing comment, so each compiles anew."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.count = 0
        self.text = VTV_SOURCE.read_text()

    def new(self) -> Path:
        self.count += 1
        path = self.directory / f"vtv_{self.count}.c"
        path.write_text(self.text + f"\n// variant {self.count} {time.time_ns()}\n")
        return path


# ---- measurements -----------------------------------------------------------------------------


def build_times(reps, variants, pt_env, ls_env):
    """CPU time of cold builds (setup done) and warm loads in new processes, interleaved: the
    `pytensor.function` or `build()` call with its compilers."""
    run_fresh(PYTENSOR_BUILD, variants.new(), pt_env)  # one-time setup for each tool
    run_fresh(LIBSECTION_BUILD, variants.new(), ls_env)
    run_fresh(LIBSECTION_BUILD, variants.new(), ls_env, "c")  # a C module's own header
    cold = {"pytensor": [], "libsection": [], "libsection C": []}
    warm = {"pytensor": [], "libsection": []}
    for _ in range(reps):
        path = variants.new()
        cold["pytensor"].append(run_fresh(PYTENSOR_BUILD, path, pt_env)["cpu"])
        result = run_fresh(LIBSECTION_BUILD, path, ls_env)
        assert result["compiled"], "libsection found a cold variant in its cache"
        cold["libsection"].append(result["cpu"])
        result = run_fresh(LIBSECTION_BUILD, path, ls_env, "c")
        assert result["compiled"], "libsection found a cold C variant in its cache"
        cold["libsection C"].append(result["cpu"])
        warm["pytensor"].append(run_fresh(PYTENSOR_BUILD, path, pt_env)["cpu"])
        result = run_fresh(LIBSECTION_BUILD, path, ls_env)
        assert not result["compiled"], "libsection recompiled a cached op"
        warm["libsection"].append(result["cpu"])
    return cold, warm


def first_builds(reps, variants, tmp: Path):
    """CPU time of whole processes (imports and compilers included) building the op on a
    machine that never built one: fresh cache folders, so each tool's one-time setup is inside
    the timing."""
    times = {"pytensor": [], "libsection": []}
    for rep in range(reps):
        path = variants.new()
        envs = {
            "pytensor": {
                **os.environ,
                **ONE_BLAS_THREAD,
                "PYTENSOR_FLAGS": f"compiledir={tmp / f'first-pt-{rep}'}",
            },
            "libsection": {
                **os.environ,
                **ONE_BLAS_THREAD,
                "LIBSECTION_CACHE_DIR": str(tmp / f"first-ls-{rep}"),
            },
        }
        for tool, code in (("pytensor", PYTENSOR_BUILD), ("libsection", LIBSECTION_BUILD)):
            start = children_cpu()
            run_fresh(code, path, envs[tool])
            times[tool].append(children_cpu() - start)
    return times


def parallel_builds(reps, variants, env, code):
    """Wall time of two processes building different cold ops at once, and of one alone."""
    alone, together = [], []
    for _ in range(reps):
        start = time.perf_counter()
        run_fresh(code, variants.new(), env)
        alone.append(time.perf_counter() - start)
        paths = [variants.new(), variants.new()]
        start = time.perf_counter()
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(p), "c++"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for p in paths
        ]
        for p in processes:
            if p.wait(timeout=600) != 0:
                raise RuntimeError("a parallel build failed")
        together.append(time.perf_counter() - start)
    return statistics.median(alone), statistics.median(together)


def compiler_control(reps, cache_dir: Path, scratch: Path):
    """The machine's own ratio: one cached module's compile command, two at once vs one."""
    import shlex

    # The cache's own reader of its entries: section-cache, installed beside this Python.
    tool = shutil.which(
        "section-cache",
        path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    if tool is None:
        raise RuntimeError("section-cache is not installed beside this Python or on PATH")
    listing = subprocess.run(
        [tool, "--cache-dir", str(cache_dir), "list", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    entry = next(e for e in json.loads(listing.stdout) if e["manifest"])
    argv = shlex.split(entry["manifest"]["compile_command"])
    source_at, output_at = argv.index("c++", argv.index("-x")) + 1, argv.index("-o") + 1
    # The command names the source in its build's work folder, since renamed to the entry's.
    source = Path(entry["dir"]) / Path(argv[source_at]).name

    def command(i):
        cmd = list(argv)
        cmd[source_at], cmd[output_at] = str(source), str(scratch / f"control{i}.o")
        return cmd

    alone, together = [], []
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run(command(0), check=True)
        alone.append(time.perf_counter() - start)
        start = time.perf_counter()
        processes = [subprocess.Popen(command(i)) for i in (1, 2)]
        if any(p.wait() != 0 for p in processes):
            raise RuntimeError("a control compile failed")
        together.append(time.perf_counter() - start)
    return statistics.median(alone), statistics.median(together)


def call_times(pt_env_dir: str):
    """Per-call times in this process: libsection, PyTensor f(x, y), NumPy x * y."""
    import timeit

    import numpy as np

    os.environ["PYTENSOR_FLAGS"] = f"compiledir={pt_env_dir}"
    # PyTensor checks its modules at exit, after this benchmark removed its temporary directory.
    warnings.filterwarnings("ignore", message="A module that was loaded by this ModuleCache")
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.link.c.op import ExternalCOp

    from libsection._build import build

    class VectorTimesVector(ExternalCOp):
        __props__ = ()

        def __init__(self):
            super().__init__([str(VTV_SOURCE)], FUNC)

        def make_node(self, x, y):
            return Apply(self, [x, y], [pt.TensorType("float64", shape=(None,))()])

        def perform(self, node, inputs, outputs):
            raise NotImplementedError

    # PyTensor pickles the op into its cache: make the class findable by name.
    VectorTimesVector.__qualname__ = "VectorTimesVector"
    globals()["VectorTimesVector"] = VectorTimesVector
    xv, yv = pt.dvector("x"), pt.dvector("y")
    f_pt = pytensor.function([xv, yv], VectorTimesVector()(xv, yv), mode="CVM")
    f_ls = build(VTV_SOURCE, FUNC, inputs=["float64[:]"] * 2, outputs=["float64[:]"])

    rows = {}
    for n in (1, 1_000, 1_000_000):
        x, y = np.random.rand(n), np.random.rand(n)
        assert np.array_equal(f_ls(x, y), x * y) and np.array_equal(f_pt(x, y), x * y)
        number = max(10, 200_000 // max(1, n // 100))
        number = 200_000 if n == 1 else number

        def best(stmt):
            return min(timeit.repeat(stmt, number=number, repeat=7)) / number

        # Interleaved, so machine noise hits all three alike.
        rows[n] = {
            "numpy": best(lambda: x * y),
            "libsection": best(lambda: f_ls(x, y)),
            "pytensor": best(lambda: f_pt(x, y)),
        }
    return rows


def memory_growth(calls=1_000_000):
    import numpy as np

    from libsection._build import build

    f = build(VTV_SOURCE, FUNC, inputs=["float64[:]"] * 2, outputs=["float64[:]"])
    x, y, short = np.ones(10), np.ones(10), np.ones(3)

    def rss():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def loop(count):
        for i in range(count):
            if i % 2:
                f(x, y)
            else:
                try:
                    f(x, short)
                except ValueError:
                    pass

    loop(10_000)
    before = rss()
    loop(calls)
    return rss() - before


# ---- report -----------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="fresh-process repetitions")
    args, _ = parser.parse_known_args()  # `./dev bench` passes every benchmark the same options

    with tempfile.TemporaryDirectory(prefix="bench_linker_") as tmp:
        tmp = Path(tmp)
        variants = Variants(tmp)
        pt_dir, ls_dir = tmp / "pytensor", tmp / "libsection"
        pt_env = {**os.environ, **ONE_BLAS_THREAD, "PYTENSOR_FLAGS": f"compiledir={pt_dir}"}
        ls_env = {**os.environ, **ONE_BLAS_THREAD, "LIBSECTION_CACHE_DIR": str(ls_dir)}
        os.environ["LIBSECTION_CACHE_DIR"] = str(ls_dir)

        print("cold builds and cached loads (fresh processes) ...", file=sys.stderr)
        cold, warm = build_times(args.reps, variants, pt_env, ls_env)
        print("first builds ever (fresh caches, whole processes) ...", file=sys.stderr)
        first = first_builds(args.reps, variants, tmp)
        print("parallel builds ...", file=sys.stderr)
        ls_alone, ls_together = parallel_builds(args.reps, variants, ls_env, LIBSECTION_BUILD)
        pt_alone, pt_together = parallel_builds(args.reps, variants, pt_env, PYTENSOR_BUILD)
        cc_alone, cc_together = compiler_control(args.reps, ls_dir, tmp)
        print("calls ...", file=sys.stderr)
        calls = call_times(str(pt_dir))
        print("memory ...", file=sys.stderr)
        growth = memory_growth()

    def against_pytensor(label, seconds, target, ours="libsection"):
        """A row of medians, libsection's (or `ours`) and PyTensor's, and their ratio."""
        ours, theirs = seconds[ours], seconds["pytensor"]
        return (
            label,
            fmt_time(ours),
            fmt_time(theirs),
            "",
            f"{ours / theirs:.3f}× PyTensor",
            target,
        )

    def medians(runs):
        return {tool: statistics.median(times) for tool, times in runs.items()}

    rows = [
        against_pytensor("cold build, setup done (CPU)", medians(cold), "≤ 0.12×"),
        against_pytensor(
            "the same, the op declared C (CPU)", medians(cold), "", ours="libsection C"
        ),
        against_pytensor(
            "first build ever, new process (setup and imports included, CPU)",
            medians(first),
            "≤ 0.5×",
        ),
        against_pytensor("new process, cached op (CPU)", medians(warm), "≤ 0.05×"),
    ]
    targets = {1: "≤ 1.0× NumPy", 1_000: "", 1_000_000: "≤ 1.1× NumPy"}
    for n, r in calls.items():
        rows.append(
            (
                f"call, n = {n:,}",
                fmt_time(r["libsection"]),
                fmt_time(r["pytensor"]),
                fmt_time(r["numpy"]),
                f"{r['libsection'] / r['numpy']:.2f}× NumPy, "
                f"{r['libsection'] / r['pytensor']:.2f}× PyTensor",
                targets[n],
            )
        )
    rows.append(
        (
            "2 builds at once / 1 alone",
            f"{ls_together:.2f} s / {ls_alone:.2f} s",
            f"{pt_together:.2f} s / {pt_alone:.2f} s",
            "",
            f"{ls_together / ls_alone:.2f} (PyTensor {pt_together / pt_alone:.2f})",
            "≈ 1",
        )
    )
    rows.append(
        (
            "control: the compiler alone, 2 / 1",
            f"{cc_together:.2f} s / {cc_alone:.2f} s",
            "",
            "",
            f"{cc_together / cc_alone:.2f} (this machine's own ratio)",
            "",
        )
    )
    rows.append(
        (
            "RSS growth, 10^6 calls",
            f"{growth / 1024:.0f} KiB",
            "",
            "",
            "success + failure paths",
            "< 1 MiB",
        )
    )

    header = ("measure", "libsection", "PyTensor", "NumPy", "ratio", "target")
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]

    def line(row):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths)) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))
    print(
        f"\nmedians of {args.reps} fresh-process runs; cold: libsection "
        f"{', '.join(fmt_time(t) for t in cold['libsection'])}; PyTensor "
        f"{', '.join(fmt_time(t) for t in cold['pytensor'])}; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
