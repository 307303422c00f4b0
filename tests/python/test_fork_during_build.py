"""A process forked while another thread builds (a multiprocessing worker started mid-build)
must not keep that build's entry lock: the child's copy of the lock's descriptor used to hold
the lock for the child's lifetime, so the child waited forever for the entry it wanted.

The fork lands inside the compile, never after it: the compiler is a wrapper that waits for a
file the parent creates only once it has forked."""

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

    built = []
    builder = threading.Thread(target=lambda: built.append(build()))
    builder.start()
    while not os.path.exists(sys.argv[1]):  # the slow compiler has started: the lock is held
        time.sleep(0.01)
    child = os.fork()
    if child == 0:
        try:
            op = build()  # the same entry: waits for the parent's build, then loads it
            import numpy as np
            assert op(np.ones(2), np.full(2, 3.0)).tolist() == [3.0, 3.0]
            assert not op.info["compiled"], "the child compiled the entry itself"
        except BaseException as e:
            print("child failed:", repr(e), flush=True)
            os._exit(1)
        os._exit(0)
    open(sys.argv[2], "w").close()  # forked while compiling: the compiler may finish now
    builder.join()
    print("parent compiled:", built[0].info["compiled"], flush=True)
    _, status = os.waitpid(child, 0)
    print("child exit", os.waitstatus_to_exitcode(status), flush=True)
    """
)


def test_a_child_forked_mid_build_gets_the_entry_once_the_parent_built_it(tmp_path):
    real = shutil.which("c++") or shutil.which("g++")
    started, forked = tmp_path / "started", tmp_path / "forked"
    wrapper = tmp_path / "slow-c++"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$1" in --version) exec {real} --version ;; esac\n'
        f"touch {started}\n"
        f"while [ ! -e {forked} ]; do sleep 0.05; done\n"
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(tmp_path / "cache"), "CXX": str(wrapper)}
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(started), str(forked)],
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
    finally:
        forked.touch()  # a compiler left waiting finishes
    assert process.returncode == 0, err[-2000:]
    assert "child exit 0" in out, (out, err[-2000:])
    assert "parent compiled: True" in out, (out, err[-2000:])
