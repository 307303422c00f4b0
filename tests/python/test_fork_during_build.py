"""A process forked while another thread builds (a multiprocessing worker started mid-build)
must not keep that build's entry lock: the child's copy of the lock's descriptor used to hold
the lock for the child's lifetime, so the child waited forever for the entry it wanted."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VTV = ROOT / "ops" / "vector_times_vector" / "vectorTimesVector.c"

SCRIPT = textwrap.dedent(
    f"""
    import os, sys, threading, time, warnings
    warnings.simplefilter("ignore")  # fork() in a threaded process: what this test is about
    import libsection

    def build():
        return libsection.build([{str(VTV)!r}], "APPLY_SPECIFIC(vector_times_vector)",
                                inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])

    builder = threading.Thread(target=build)
    builder.start()
    while not os.path.exists(sys.argv[1]):  # the slow compiler has started: the lock is held
        time.sleep(0.01)
    child = os.fork()
    if child == 0:
        try:
            op = build()  # the same entry: waits for the parent's build, then loads it
            import numpy as np
            assert op(np.ones(2), np.full(2, 3.0)).tolist() == [3.0, 3.0]
        except BaseException as e:
            print("child failed:", repr(e), flush=True)
            os._exit(1)
        os._exit(0)
    builder.join()
    _, status = os.waitpid(child, 0)
    print("child exit", os.waitstatus_to_exitcode(status), flush=True)
    """
)


def test_a_child_forked_mid_build_gets_the_entry_once_the_parent_built_it(tmp_path):
    real = shutil.which("c++") or shutil.which("g++")
    started = tmp_path / "started"
    wrapper = tmp_path / "slow-c++"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$1" in --version) exec {real} --version ;; esac\n'
        f'touch {started}\nsleep 2\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(tmp_path / "cache"), "CXX": str(wrapper)}
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(started)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so a hung child can be killed with its parent
    )
    try:
        out, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        raise AssertionError(f"the forked child waited for the lock forever: {out} {err[-1500:]}")
    assert process.returncode == 0, err[-2000:]
    assert "child exit 0" in out, (out, err[-2000:])
