"""A cold `pip install .`: a clean copy of a commit into a fresh venv, timed as a whole process.

Each repetition exports the commit (`git archive`, so only committed files and no build tree),
makes a fresh venv with the given Python, and times `pip install -q <copy>` from start to exit:
wall clock, and the user and system CPU of pip and everything it ran (the compiler, the linker,
build isolation's own installs of scikit-build-core and pybind11; cmake and ninja come from
PATH). pip's download cache is used as it is. On a shared machine, user CPU is the steadier
figure: load from others stretches wall time more than it adds CPU. When ccache is on PATH the
build uses it; each run gets an empty ccache folder (a cold build) unless `--warm-ccache`, which
shares one between the runs: the second run is then a re-install from a warm cache.

`--ninja-log N` keeps the C++ build tree of the last repetition and prints its N slowest steps
(from ninja's log), the place to look when the build gets slower. `--define NAME=VALUE` sets a
CMake option (`-Ccmake.define.NAME=VALUE`), to time a build setting against the defaults.

    python3 bench/bench_install.py                     # HEAD, twice
    python3 bench/bench_install.py --rev main --installs 3 --ninja-log 15
    python3 bench/bench_install.py --define LIBSECTION_UNITY_BUILD=OFF
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def export_commit(rev: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def timed_install(
    python: str, source: Path, venv: Path, extra: list[str], ccache_dir: Path
) -> tuple[float, float, float]:
    """(wall, user, sys) seconds of one `pip install` into a venv made just before."""
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", CCACHE_DIR=str(ccache_dir))
    env.pop("VIRTUAL_ENV", None)
    command = [str(venv / "bin" / "pip"), "install", "-q", *extra, str(source)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def slowest_steps(build_dir: Path, count: int) -> list[tuple[float, str]]:
    """The slowest steps of the last ninja run in build_dir, as (seconds, output)."""
    steps: dict[str, float] = {}
    for line in (build_dir / ".ninja_log").read_text().splitlines()[1:]:
        start, end, _, output, _ = line.split("\t")
        steps[output] = (int(end) - int(start)) / 1000
    return sorted(((t, out) for out, t in steps.items()), reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", default="HEAD", help="the commit to install (default HEAD)")
    parser.add_argument("--installs", type=int, default=2, help="cold installs to time (default 2)")
    parser.add_argument("--python", default="python3.11", help="for the venv (default python3.11)")
    parser.add_argument("--ninja-log", type=int, default=0, metavar="N")
    parser.add_argument(
        "--warm-ccache",
        action="store_true",
        help="share one ccache folder between the runs (default: an empty one per run)",
    )
    parser.add_argument(
        "--define",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a CMake option for the build (-Ccmake.define.NAME=VALUE); repeatable",
    )
    args, _ = parser.parse_known_args()  # `./dev bench` passes every benchmark the same options

    rev = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    python = shutil.which(args.python) or sys.executable
    defines = [f"-Ccmake.define.{d}" for d in args.define]
    shown = " ".join(["pip install -q", *defines, "."])
    print(f"cold `{shown}` of {args.rev} ({rev}), {os.cpu_count()} CPUs, {python}")
    print(f"{'run':>4} {'wall':>8} {'user':>8} {'sys':>8}   (s)")
    with tempfile.TemporaryDirectory(prefix="bench_install_") as tmp:
        for i in range(args.installs):
            # The same paths each time, as for a user who clones again into the same folder.
            run = Path(tmp) / "run"
            export_commit(args.rev, run / "src")
            keep = args.ninja_log and i == args.installs - 1
            extra = defines + ([f"-Cbuild-dir={run / 'build'}"] if keep else [])
            ccache_dir = Path(tmp) / "ccache" if args.warm_ccache else Path(tmp) / f"ccache{i}"
            wall, user, sys_ = timed_install(python, run / "src", run / "venv", extra, ccache_dir)
            print(f"{i + 1:>4} {wall:>8.1f} {user:>8.1f} {sys_:>8.1f}", flush=True)
            if keep:
                print(f"slowest build steps of run {i + 1} (s):")
                for seconds, output in slowest_steps(run / "build", args.ninja_log):
                    print(f"{seconds:>8.1f}  {output}")
            shutil.rmtree(run)


if __name__ == "__main__":
    main()
