"""Build time against the number of inputs: an op of n float64 vectors, n = 50 .. 400.

    python bench/bench_many_inputs.py [--reps N]

Issue #24's target: 400 inputs in <= 3 s, and build time linear in the input count. Each row is
the median CPU time (the process's and its compilers') of N cold builds with
`libsection.build()` in fresh processes (the one-time setup
done first; imports not counted), and the time per input above the 50-input build. A linear
build keeps that last column flat. PyTensor is not run beside it: its own ExternalCOp takes
minutes at these sizes, which says nothing about ours.
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

from timefmt import CPU_NOW  # bench/ is the script's own folder

BUILD = (
    CPU_NOW
    + """
import json, sys, time
from libsection import build
n = int(sys.argv[2])
start, cpu_start = time.perf_counter(), cpu_now()
f = build(sys.argv[1], "APPLY_SPECIFIC(first)", inputs=["float64[:]"] * n, outputs=["float64[:]"])
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": cpu_now() - cpu_start,
                  "compiled": f.info["compiled"]}))
"""
)


def source(n: int, variant: str) -> str:
    params = ", ".join(f"PyArrayObject* x{i}" for i in range(n))
    return (
        "#section support_code_apply\n"
        f"// {variant}\n"
        f"int APPLY_SPECIFIC(first)({params}, PyArrayObject** out) {{\n"
        "  Py_XINCREF(x0);\n  Py_XDECREF(*out);\n  *out = x0;\n  return 0;\n}\n"
    )


def build_once(directory: Path, n: int, env: dict) -> float:
    path = directory / f"many_{n}_{time.time_ns()}.c"
    path.write_text(source(n, path.name))
    out = subprocess.run(
        [sys.executable, "-c", BUILD, str(path), str(n)],
        env=env, capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["compiled"], "a fresh variant was found in the cache"
    return result["cpu"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args, _ = parser.parse_known_args()  # ./dev bench hands every benchmark the same options
    sizes = (50, 100, 200, 400)
    with tempfile.TemporaryDirectory(prefix="bench-many-") as tmp:
        directory = Path(tmp)
        env = {**os.environ, "LIBSECTION_CACHE_DIR": str(directory / "cache")}
        build_once(directory, 2, env)  # the one-time setup (precompiled header)
        medians = {}
        for n in sizes:
            medians[n] = statistics.median(build_once(directory, n, env) for _ in range(args.reps))
    print(
        f"cold build() of an op with n float64[:] inputs, CPU time, "
        f"median of {args.reps} fresh processes"
    )
    print("inputs | build | per input above 50 inputs")
    for n in sizes:
        slope = f"{(medians[n] - medians[50]) / (n - 50) * 1000:.1f} ms" if n > 50 else "-"
        print(f"{n} | {medians[n]:.2f} s | {slope}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
