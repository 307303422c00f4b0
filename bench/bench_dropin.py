"""The drop-in against PyTensor's own ExternalCOp, side by side in one run, as users run them.

    python bench/bench_dropin.py [--reps 5] [--markdown]

Every row is a ratio measured in this run (the machines are noisy: compare within a run):
  * whole processes (`python -c`, imports included; CPU time of the process and the compilers
    it runs) compiling a graph of the tutorial's
    VectorTimesVector op in mode="CVM": cold (the op not yet compiled, each tool's one-time
    setup done) and cached (a new process finding it on disk); and the same above the floor, a
    process that runs the same graph with a Python op (import, graph, rewrites, the VM); the
    drop-in both as it is (C++) and declared C (`language = "c"`, the same file); and, cold,
    the compilers' part alone (a tenth of a second of noise in a whole process is more than
    a small module's compile);
  * graphs of 1, 5 and 20 distinct ops, cold, in one process;
  * the call `f(x, y)` at n = 1 and n = 10^6 in each mode, against PyTensor's own op in CVM,
    and the class API `op(x, y)` and the raw compiled op against NumPy's `x * y`.
Cold builds compile variants of the op file (a different trailing comment each), so both tools
really compile. `--markdown` prints the README's table; `--cold-only` measures the one-op rows
alone (give it more `--reps`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timefmt import ONE_BLAS_THREAD, children_cpu, fmt_time  # bench/ is the script's own folder

ROOT = Path(__file__).resolve().parent.parent
VTV = ROOT / "ops" / "vector_times_vector" / "vectorTimesVector.c"

# The same op on either base class; `paths` are the op's section files (one variant each).
GRAPH = """
import json, sys, time, warnings
start = time.perf_counter()
import numpy as np
import pytensor, pytensor.tensor as pt
from pytensor.graph.basic import Apply
if sys.argv[1] == "pytensor":
    from pytensor.link.c.op import ExternalCOp
else:
    from libsection.pytensor import ExternalCOp
if sys.argv[1] == "floor":  # the same process with a Python op: what no C op can save
    from pytensor.graph.op import Op
    class VectorTimesVector(Op):
        __props__ = ("path",)
        def __init__(self, path):
            self.path = path
        def make_node(self, x, y):
            return Apply(self, [x, y], [pt.dvector()])
        def perform(self, node, inputs, outputs):
            outputs[0][0] = inputs[0] * inputs[1]

class ExternalVectorTimesVector(ExternalCOp):
    __props__ = ("path",)
    if sys.argv[1] == "libsection-c":
        language = "c"
    def __init__(self, path):
        self.path = path
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            super().__init__([path], "APPLY_SPECIFIC(vector_times_vector)")
    def make_node(self, x, y):
        return Apply(self, [x, y], [pt.dvector()])
    def perform(self, node, inputs, outputs):  # PyTensor's Op requires one; CVM never calls it
        raise NotImplementedError

if sys.argv[1] != "floor":
    VectorTimesVector = ExternalVectorTimesVector
x, y = pt.dvector("x"), pt.dvector("y")
outputs = [VectorTimesVector(p)(x, y) for p in sys.argv[2:]]
f = pytensor.function([x, y], outputs, mode="CVM")
a = np.arange(10.0)
assert all(np.array_equal(r, a * a) for r in f(a, a))
import resource
compilers = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": time.perf_counter() - start,
                  "compilers": compilers.ru_utime + compilers.ru_stime}))
"""

CALLS = """
import json, sys, timeit, warnings
sys.path.insert(0, {ops!r})
import numpy as np
import pytensor, pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.link.c.op import ExternalCOp as PyTensorExternalCOp
from libsection.pytensor import ExternalCOp
from vector_times_vector.op import VectorTimesVector as Standalone

class Recipe:
    __props__ = ()
    def __init__(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            super().__init__([{vtv!r}], "APPLY_SPECIFIC(vector_times_vector)")
    def make_node(self, x, y):
        return Apply(self, [x, y], [pt.dvector()])

class Theirs(Recipe, PyTensorExternalCOp):
    __props__ = ()
    def perform(self, node, inputs, outputs):  # PyTensor's Op requires one; CVM never calls it
        raise NotImplementedError

class Ours(Recipe, ExternalCOp):
    __props__ = ()

def best(fn, n):
    number = max(1, 200_000 // n)
    return min(timeit.repeat(fn, number=number, repeat=7)) / number

out = {{}}
x, y = pt.dvector("x"), pt.dvector("y")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    functions = {{"pytensor CVM": pytensor.function([x, y], Theirs()(x, y), mode="CVM")}}
    for mode in ["CVM", "FAST_COMPILE", "NUMBA"]:
        functions["drop-in " + mode] = pytensor.function([x, y], Ours()(x, y), mode=mode)
    standalone = Standalone()
for n in (1, 10**6):
    a, b = np.random.rand(n), np.random.rand(n)
    raw = standalone.compiled("float64[:]", "float64[:]")
    standalone(a, b)
    row = {{"numpy x*y": best(lambda: a * b, n),
            "class API op(x, y)": best(lambda: standalone(a, b), n),
            "raw compiled op": best(lambda: raw(a, b), n)}}
    for name, f in functions.items():
        f(a, b)
        row[name] = best(lambda: f(a, b), n)
    out[n] = row
print(json.dumps(out))
"""


def fresh_env(tmp: Path, name: str) -> dict:
    env = dict(os.environ, **ONE_BLAS_THREAD)
    env["LIBSECTION_CACHE_DIR"] = str(tmp / f"ls-{name}")
    env["PYTENSOR_FLAGS"] = f"compiledir={tmp / f'pt-{name}'}"
    return env


def run(code: str, args: list[str], env: dict) -> tuple[float, str]:
    """CPU time of a whole process and its compilers, imports included, and its output."""
    start = children_cpu()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True
    )
    cpu = children_cpu() - start
    if done.returncode != 0:
        raise SystemExit(f"benchmark process failed:\n{done.stderr[-3000:]}")
    return cpu, done.stdout


def run_graph(args: list[str], env: dict) -> tuple[float, float]:
    """CPU time of a `GRAPH` process, and of the compilers it ran (their part of it: far less
    noisy than the whole process, whose import alone varies by a tenth of a second)."""
    cpu, out = run(GRAPH, args, env)
    return cpu, json.loads(out)["compilers"]


class Variants:
    """Copies of the op file that differ in a trailing comment: each compiles afresh."""

    def __init__(self, directory: Path):
        self.directory, self.count = directory, 0
        self.text = VTV.read_text()

    def new(self) -> str:
        self.count += 1
        path = self.directory / f"vtv_{self.count}.c"
        path.write_text(self.text + f"\n// variant {self.count} {time.time_ns()}\n")
        return str(path)


def median(values):
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="fresh-process repetitions")
    parser.add_argument("--markdown", action="store_true", help="print the README table")
    parser.add_argument(
        "--cold-only", action="store_true", help="only the one-op rows (more --reps for them)"
    )
    args, _ = parser.parse_known_args()  # `./dev bench` passes every benchmark the same options
    rows: list[tuple[str, str, str, str]] = []

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        variants = Variants(tmp)
        envs = {tool: fresh_env(tmp, tool) for tool in ("pytensor", "libsection", "libsection-c")}
        for tool, env in envs.items():  # one-time setup of each tool, outside the timings
            run_graph([tool, variants.new()], env)

        print("[bench] whole processes, one op, CVM", file=sys.stderr)
        cold = {t: [] for t in envs}
        cached = {t: [] for t in envs}
        compilers = {t: [] for t in envs}  # of the cold runs
        floors = []
        for _ in range(args.reps):
            for tool, env in envs.items():  # interleaved, so drift hits both
                path = variants.new()
                cpu, compiling = run_graph([tool, path], env)
                cold[tool].append(cpu)
                compilers[tool].append(compiling)
                cached[tool].append(run_graph([tool, path], env)[0])
            # The floor: the same process with a Python op in place of the C op (import
            # pytensor, build the graph, its rewrites, the VM), a cost neither op can remove.
            floors.append(run_graph(["floor", path], envs["pytensor"])[0])
        floor = median(floors)
        for label, data in (("cold", cold), ("cached", cached)):
            pt_ = median(data["pytensor"])
            for tool, what in (("libsection", ""), ("libsection-c", ", the op declared C")):
                ls = median(data[tool])
                rows.append(
                    (
                        f"new process, `pytensor.function` of the op in CVM, {label}{what} "
                        "(CPU time, imports and compilers included)",
                        f"{ls:.2f} s",
                        f"{pt_:.2f} s",
                        f"{ls / pt_:.2f}×",
                    )
                )
                # Below the floor, or within the 0.01 s the table shows, is noise: the op costs
                # nothing measurable there.
                above = ls - floor if ls - floor >= 0.005 else 0.0
                rows.append(
                    (
                        f"the same, {label}{what}, above the floor (the process with a Python "
                        f"op, {floor:.2f} s)",
                        f"{above:.2f} s",
                        f"{pt_ - floor:.2f} s",
                        f"{above / (pt_ - floor):.2f}×" if above else "at the floor",
                    )
                )
                if label == "cold":
                    ours, theirs = median(compilers[tool]), median(compilers["pytensor"])
                    rows.append(
                        (
                            f"the same, cold{what}, its compilers alone (CPU time of the "
                            "compiler and linker processes the run started)",
                            f"{ours:.2f} s",
                            f"{theirs:.2f} s",
                            f"{ours / theirs:.2f}×",
                        )
                    )

        if args.cold_only:
            print_rows(rows, args.markdown)
            return
        for k in (1, 5, 20):
            print(f"[bench] a graph of {k} distinct ops, cold", file=sys.stderr)
            times = {t: [] for t in ("pytensor", "libsection")}
            for _ in range(max(1, args.reps // 2)):
                for tool in times:
                    env = envs[tool]
                    paths = [variants.new() for _ in range(k)]
                    times[tool].append(run_graph([tool, *paths], env)[0])
            ls, pt_ = median(times["libsection"]), median(times["pytensor"])
            rows.append(
                (
                    f"new process compiling a graph of {k} distinct ops in CVM (cold, CPU time)",
                    f"{ls:.2f} s",
                    f"{pt_:.2f} s",
                    f"{ls / pt_:.2f}×",
                )
            )

        print("[bench] calls", file=sys.stderr)
        env = fresh_env(tmp, "calls")
        code = CALLS.format(ops=str(ROOT / "ops"), vtv=str(VTV))
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"call benchmark failed:\n{done.stderr[-3000:]}")
        calls = json.loads(done.stdout)
        for n, row in calls.items():
            size = "1 element" if n == "1" else "10^6 elements"
            base, numpy = row["pytensor CVM"], row["numpy x*y"]
            for mode in ("CVM", "FAST_COMPILE", "NUMBA"):
                t = row["drop-in " + mode]
                rows.append(
                    (
                        f"call `f(x, y)`, drop-in in {mode}, {size}",
                        fmt_time(t),
                        fmt_time(base),
                        f"{t / base:.2f}× PyTensor's CVM",
                    )
                )
            for name in ("class API op(x, y)", "raw compiled op"):
                t = row[name]
                rows.append(
                    (
                        f"call `{name.split(' ', 2)[-1]}` ({name.rsplit(' ', 2)[0]}), {size}",
                        fmt_time(t),
                        "",
                        f"{t / numpy:.2f}× NumPy's `x * y` ({fmt_time(numpy)})",
                    )
                )

    print_rows(rows, args.markdown)


def print_rows(rows: list[tuple[str, str, str, str]], markdown: bool) -> None:
    width = max(len(r[0]) for r in rows)
    if markdown:
        print("| what it times | libsection | PyTensor's own op | ratio |\n|---|---|---|---|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |")
    else:
        for r in rows:
            print(f"{r[0]:<{width}}  {r[1]:>10}  {r[2]:>10}  {r[3]}")


if __name__ == "__main__":
    main()
