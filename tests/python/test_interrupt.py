"""SIGINT during a compile (Ctrl-C, a notebook's "interrupt kernel", `kill -INT` on the Python
process alone) stops it promptly: the compiler's whole process group is killed, nothing is
published in the cache, the entry's lock is free, KeyboardInterrupt reaches the caller, and a
later build succeeds.

The slow compiler is a wrapper (CXX) that answers --version at once, records its pid, then
sleeps a minute before running the real compiler: an interrupt that did not kill it would
leave the build waiting for a minute."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VTV = ROOT / "ops" / "vector_times_vector" / "vectorTimesVector.c"

BUILD = textwrap.dedent(
    f"""
    import sys, libsection
    print("building", flush=True)
    try:
        libsection.build([{str(VTV)!r}], "APPLY_SPECIFIC(vector_times_vector)",
                         inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
    except KeyboardInterrupt:
        print("KeyboardInterrupt reached the caller", flush=True)
        sys.exit(3)
    print("built", flush=True)
    """
)


# build_many compiles in worker threads, which a signal does not reach: the interrupted caller
# stops them.
BUILD_MANY = textwrap.dedent(
    f"""
    import sys, libsection
    print("building", flush=True)
    spec = dict(files=[{str(VTV)!r}], func_name="APPLY_SPECIFIC(vector_times_vector)",
                outputs=["float64[:]"])
    try:
        libsection.build_many([dict(spec, inputs=["float64[:]", "float64[:]"]),
                               dict(spec, inputs=["float32[:]", "float64[:]"])], jobs=2)
    except KeyboardInterrupt:
        print("KeyboardInterrupt reached the caller", flush=True)
        sys.exit(3)
    print("built", flush=True)
    """
)


def slow_compiler(tmp_path: Path) -> Path:
    real = shutil.which("c++") or shutil.which("g++")
    assert real, "no C++ compiler on PATH"
    wrapper = tmp_path / "slow-c++"
    wrapper.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            case "$1" in --version) exec {real} --version ;; esac
            echo $$ >> {tmp_path / "pids"}
            sleep 60
            exec {real} "$@"
            """
        )
    )
    wrapper.chmod(0o755)
    return wrapper


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = (
        Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}").exists() else "X"
    )
    return state not in ("Z", "X")


@pytest.mark.parametrize("call", ["build", "build_many"])
def test_sigint_during_a_compile_stops_it_and_leaves_nothing(call, tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(cache), "CXX": str(slow_compiler(tmp_path))}
    child = subprocess.Popen(
        [sys.executable, "-c", BUILD if call == "build" else BUILD_MANY],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "building"
        deadline = time.monotonic() + 60
        while not (tmp_path / "pids").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "pids").exists(), "the compiler never started"
        compiler_pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 3, (out, err[-2000:])
    assert "KeyboardInterrupt reached the caller" in out
    assert took < 5, f"the build took {took:.1f} s to stop"  # the compiler sleeps 60 s
    compiler_pids = [int(p) for p in (tmp_path / "pids").read_text().split()]  # all started
    for pid in compiler_pids:
        assert not alive(pid), f"compiler process {pid} survived the interrupt"
    entries = cache / "entries"
    assert not entries.exists() or not any(entries.iterdir()), list(entries.iterdir())

    # The lock is free and nothing half-built is found: a build with the real compiler works.
    env.pop("CXX")
    done = subprocess.run(
        [sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["building", "built"]


def test_a_keyboard_interrupt_in_a_log_handler_is_not_discarded(tmp_path):
    # The interrupt arrives while a build logs through Python (its records go to the
    # `libsection` logger): the handler's KeyboardInterrupt must reach the caller.
    code = textwrap.dedent(
        f"""
        import logging, sys, libsection

        class Interrupting(logging.Handler):
            def emit(self, record):
                raise KeyboardInterrupt

        logging.getLogger("libsection").addHandler(Interrupting())
        logging.getLogger("libsection").setLevel(logging.INFO)
        try:
            libsection.build([{str(VTV)!r}], "APPLY_SPECIFIC(vector_times_vector)",
                             inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
        except KeyboardInterrupt:
            sys.exit(3)
        sys.exit(0)
        """
    )
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 3, done.stderr[-2000:]
