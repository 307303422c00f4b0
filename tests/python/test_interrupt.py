"""SIGINT during a compile (Ctrl-C, a notebook's "interrupt kernel", `kill -INT` on the Python
process alone) stops it: the compiler's whole process group is killed (in the caller's thread,
before KeyboardInterrupt reaches it), nothing is published in the cache, the entry's lock is
free, and a later build succeeds. Only the interrupted call's builds stop: another thread's
build goes on.

The slow compiler is a wrapper (CXX) that answers --version at once, records its pid, then waits
for a file the test creates only when it wants the compile to go on: an interrupt that did not
kill it would leave the build waiting (until a hang guard's timeout fails the test)."""

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
HANG_GUARD = 120  # seconds; a working build never waits near this long

# What the child scripts share: the op, and which of the compilers it started are alive.
PRELUDE = textwrap.dedent(
    f"""
    import os, sys, threading, libsection
    pids_file = sys.argv[1]
    spec = dict(files=[{str(VTV)!r}], func_name="APPLY_SPECIFIC(vector_times_vector)",
                outputs=["float64[:]"])

    def alive(pid):
        try:
            with open(f"/proc/{{pid}}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except FileNotFoundError:
            return False

    def compilers_alive():
        return [p for p in map(int, open(pids_file).read().split()) if alive(p)]
    """
)

BUILD = PRELUDE + textwrap.dedent(
    """
    print("building", flush=True)
    try:
        libsection.build(**spec, inputs=["float64[:]", "float64[:]"])
    except KeyboardInterrupt:
        print("KeyboardInterrupt reached the caller; compilers alive:", compilers_alive(),
              flush=True)
        sys.exit(3)
    print("built", flush=True)
    """
)

# build_many compiles in worker threads, which a signal does not reach: the interrupted caller
# stops them.
BUILD_MANY = PRELUDE + textwrap.dedent(
    """
    print("building", flush=True)
    try:
        libsection.build_many([dict(spec, inputs=["float64[:]", "float64[:]"]),
                               dict(spec, inputs=["float32[:]", "float64[:]"])], jobs=2)
    except KeyboardInterrupt:
        print("KeyboardInterrupt reached the caller; compilers alive:", compilers_alive(),
              flush=True)
        sys.exit(3)
    print("built", flush=True)
    """
)

# Another thread builds meanwhile, for itself: interrupting build_many must leave its build be.
# Its compile starts first (build_many's then wait for the precompiled header it makes).
BESIDE_ANOTHER_THREAD = PRELUDE + textwrap.dedent(
    """
    import time
    import numpy as np
    outcome = []

    def other_thread():
        try:
            op = libsection.build(**spec, inputs=["float32[:]", "float32[:]"])
            outcome.append(op(np.ones(2, np.float32), np.full(2, 3, np.float32)).tolist())
        except BaseException as e:
            outcome.append(repr(e))

    def announce():  # "building" once build_many's workers exist: the signal lands inside it
        while not any(t.name.startswith("libsection-build") for t in threading.enumerate()):
            time.sleep(0.01)
        print("building", flush=True)

    other = threading.Thread(target=other_thread)
    other.start()
    while not os.path.exists(pids_file):  # the other thread's build is under way
        time.sleep(0.01)
    threading.Thread(target=announce, daemon=True).start()
    try:
        libsection.build_many([dict(spec, inputs=["float64[:]", "float64[:]"]),
                               dict(spec, inputs=["float32[:]", "float64[:]"])], jobs=2)
    except KeyboardInterrupt:
        print("KeyboardInterrupt reached the caller", flush=True)
    open(sys.argv[2], "w").close()  # the other thread's compiler may go on now
    other.join()
    print("the other thread:", outcome, flush=True)
    """
)

# The interrupt lands while build_many is still handing out its builds: sent from inside the
# executor's submit, once the first worker's compiler has started (and waits). Its builds must
# stop before anything waits for them: the worker's compiler waits for a file this process
# creates only after build_many returns, as a worker would wait on a lock another thread holds.
WHILE_SUBMITTING = PRELUDE + textwrap.dedent(
    """
    import signal, time
    from concurrent.futures import ThreadPoolExecutor

    submit = ThreadPoolExecutor.submit

    def submit_then_interrupt(self, *args, **kwargs):
        future = submit(self, *args, **kwargs)
        while not os.path.exists(pids_file):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # handled here, in this thread, at once
        return future

    ThreadPoolExecutor.submit = submit_then_interrupt
    try:
        libsection.build_many([dict(spec, inputs=["float64[:]", "float64[:]"]),
                               dict(spec, inputs=["float32[:]", "float64[:]"])], jobs=2)
    except KeyboardInterrupt:
        print("KeyboardInterrupt reached the caller", flush=True)
    open(sys.argv[2], "w").close()
    """
)


def slow_compiler(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(wrapper, the file of its pids, the file that lets it go on)."""
    real = shutil.which("c++") or shutil.which("g++")
    assert real, "no C++ compiler on PATH"
    pids, release = tmp_path / "pids", tmp_path / "release"
    wrapper = tmp_path / "slow-c++"
    wrapper.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            case "$1" in --version) exec {real} --version ;; esac
            echo $$ >> {pids}
            while [ ! -e {release} ]; do sleep 0.05; done
            exec {real} "$@"
            """
        )
    )
    wrapper.chmod(0o755)
    return wrapper, pids, release


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = (
        Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}").exists() else "X"
    )
    return state not in ("Z", "X")


def started(pids: Path, n: int, child: subprocess.Popen) -> list[int]:
    """Waits until `n` compilers have started (a hang guard's deadline): their pids."""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline and child.poll() is None:
        found = [int(p) for p in pids.read_text().split()] if pids.exists() else []
        if len(found) >= n:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{n} compilers never started (child exit {child.poll()})")


def interrupted(script: str, tmp_path: Path, compilers: int, env: dict):
    """Runs `script` with the slow compiler, sends SIGINT once `compilers` compiles are under
    way (0: the script interrupts itself): (its stdout, its stderr, its exit code, the
    compilers' pids then)."""
    wrapper, pids, release = slow_compiler(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(pids), str(release)],
        env={**env, "CXX": str(wrapper)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    compiler_pids = []
    try:
        if compilers:
            assert child.stdout.readline().strip() == "building"
            compiler_pids = started(pids, compilers, child)
            child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=HANG_GUARD)
    finally:
        release.touch()  # whatever is left of the compilers finishes
        if child.poll() is None:
            child.kill()
            child.communicate()
    return out, err, child.returncode, compiler_pids


# One compiler each: build_many's second compile waits for the precompiled header the first
# makes.
@pytest.mark.parametrize(("call", "compilers"), [("build", 1), ("build_many", 1)])
def test_sigint_during_a_compile_stops_it_and_leaves_nothing(call, compilers, tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(cache)}
    out, err, code, compiler_pids = interrupted(
        BUILD if call == "build" else BUILD_MANY, tmp_path, compilers, env
    )
    assert code == 3, (out, err[-2000:])
    # Stopped means: the compilers are gone (a build in the caller's own thread kills its
    # compiler before the interrupt reaches the caller; build_many's workers, which the caller
    # cancels, by the time the process ends), and nothing was published.
    assert "KeyboardInterrupt reached the caller; compilers alive:" in out, (out, err[-2000:])
    if call == "build":
        assert "compilers alive: []" in out, out
    for pid in compiler_pids:
        assert not alive(pid), f"compiler process {pid} survived the interrupt"
    entries = cache / "entries"
    assert not entries.exists() or not any(entries.iterdir()), list(entries.iterdir())

    # The lock is free and nothing half-built is found: a build with the real compiler works.
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path / "no-pids")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["building", "built"]


def test_interrupting_one_call_leaves_another_threads_build_be(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(cache)}
    out, err, code, compiler_pids = interrupted(BESIDE_ANOTHER_THREAD, tmp_path, 1, env)
    assert code == 0, (out, err[-2000:])
    assert "KeyboardInterrupt reached the caller" in out, (out, err[-2000:])
    # The other thread's build went on once its compiler could, and ended with a working op,
    # not a KeyboardInterrupt of its own.
    assert "the other thread: [[3.0, 3.0]]" in out, (out, err[-2000:])
    for pid in compiler_pids:
        assert not alive(pid), f"compiler process {pid} outlived the process"


def test_an_interrupt_while_build_many_hands_out_its_builds_stops_them_first(tmp_path):
    """build_many once waited for its workers (leaving the `with` of its executor) before it
    cancelled their builds: an interrupt that landed while it submitted them then waited for
    every compile to end, and forever for a worker waiting on something the caller holds
    (another thread's build, gated by the caller: test_interrupting_one_call_... hung so)."""
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(tmp_path / "cache")}
    out, err, code, _ = interrupted(WHILE_SUBMITTING, tmp_path, 0, env)
    assert code == 0, (out, err[-2000:])
    assert out == "KeyboardInterrupt reached the caller\n", (out, err[-2000:])
    for pid in map(int, (tmp_path / "pids").read_text().split()):
        assert not alive(pid), f"compiler process {pid} outlived the interrupt"


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
