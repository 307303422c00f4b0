"""-O2 against libsection's default -O3, on every example op of ops/, in fresh processes.

    python bench/bench_optlevel.py [--reps 3]

Each repetition runs one process per level, alternating, each with an empty cache of its own
(`LIBSECTION_CACHE_DIR`), so every op really compiles; `LIBSECTION_CXXFLAGS=-O2` selects -O2
(the last -O flag wins). Prints, per op, the median cold build (`op(*inputs)` on a fresh
cache; the first op also pays the one-time header setup) and the median call at n = 10^6, with
the -O2/-O3 ratios. -O2 is worth taking only if it builds faster and calls no slower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timefmt import fmt_time  # bench/ is the script's own folder

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time, timeit
sys.path.insert(0, sys.argv[1])
import numpy as np
from examples import EXAMPLES
out = {}
for ex in EXAMPLES:
    op = ex.op()
    inputs = ex.inputs()
    big = tuple(np.resize(a, 10**6) if isinstance(a, np.ndarray) else a for a in inputs)
    start = time.perf_counter()
    op(*inputs)
    build = time.perf_counter() - start
    call = min(timeit.repeat(lambda: op(*big), number=20, repeat=5)) / 20
    out[ex.folder] = [build, call]
print(json.dumps(out))
"""

LEVELS = {"-O3": None, "-O2": "-O2"}


def run_level(flags: str | None) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, LIBSECTION_CACHE_DIR=cache)
        env.pop("LIBSECTION_CXXFLAGS", None)
        if flags:
            env["LIBSECTION_CXXFLAGS"] = flags
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(ROOT / "ops")],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            sys.exit(f"bench_optlevel: the {flags or '-O3'} run failed:\n{done.stderr}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="fresh-process repetitions per level")
    args, _ = parser.parse_known_args()  # `./dev bench` passes every benchmark the same options
    runs: dict[str, list[dict[str, list[float]]]] = {level: [] for level in LEVELS}
    for rep in range(args.reps):
        for level, flags in LEVELS.items():
            print(f"[bench_optlevel] {level}, repetition {rep + 1}/{args.reps}", file=sys.stderr)
            runs[level].append(run_level(flags))
    print("\n-O2 against -O3 (median of %d fresh processes each)" % args.reps)
    print(
        f"{'op':22} {'build -O3':>10} {'build -O2':>10} {'ratio':>6} "
        f"{'call -O3':>10} {'call -O2':>10} {'ratio':>6}"
    )
    for op in runs["-O3"][0]:

        def median(level: str, index: int) -> float:
            return statistics.median(run[op][index] for run in runs[level])

        b3, b2, c3, c2 = median("-O3", 0), median("-O2", 0), median("-O3", 1), median("-O2", 1)
        print(
            f"{op:22} {fmt_time(b3):>10} {fmt_time(b2):>10} {b2 / b3:5.2f}× "
            f"{fmt_time(c3):>10} {fmt_time(c2):>10} {c2 / c3:5.2f}×"
        )


if __name__ == "__main__":
    main()
