"""A real SIGINT (Ctrl-C, a notebook's "interrupt kernel", `kill -INT`) at every entry point of
an op, during a call and during a build: the caller gets KeyboardInterrupt, the process lives,
and nothing is torn down (the op is called, or built, again and answers).

The entry points: `build()`'s op called directly, the class API (`libsection.ExternalCOp`), and a
drop-in op in PyTensor's CVM, FAST_COMPILE, NUMBA and JAX modes. A call is interrupted while
the op's C code sleeps with the GIL released (the signal's handler then runs only when the call
is back in Python), on its first call: a first call once ran one-time set-up in Python where an
exception could not propagate, and aborted the process (`terminate called after throwing an
instance of 'pybind11::error_already_set'`). A build is interrupted while the compiler runs (a
wrapper that sleeps a minute first).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# The op: a copy of its input, after sleeping three seconds with the GIL released when the file
# `sleep-please` exists in the working directory (it says it started by creating `op-started`).
SLEEPY = """\
#section support_code
#include <unistd.h>

#section code
{
    if (access("sleep-please", F_OK) == 0) {
        FILE* started = fopen("op-started", "w");
        if (started) fclose(started);
        Py_BEGIN_ALLOW_THREADS
        for (int i = 0; i < 300 && access("sleep-please", F_OK) == 0; ++i) usleep(10000);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(OUTPUT_0);
    OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_ANYORDER);
    if (NULL == OUTPUT_0) FAIL;
}
"""

# The same op as PyTensor users write it, without Py_BEGIN_ALLOW_THREADS: the linker runs its
# code without the GIL (the child starts a second thread, so there is one to give it to).
SLEEPY_AS_WRITTEN = SLEEPY.replace("        Py_BEGIN_ALLOW_THREADS\n", "").replace(
    "        Py_END_ALLOW_THREADS\n", ""
)

# One entry point, made ready (`make`) and called (`call`), in a process of its own.
CHILD = textwrap.dedent(
    """
    import os, sys
    import numpy as np

    route, phase = sys.argv[1], sys.argv[2]
    SLEEPY = os.path.abspath("sleepy.c")
    if os.environ.get("SECOND_THREAD"):  # another thread: the linker gives the GIL up
        import threading, time
        threading.Thread(target=lambda: time.sleep(3600), daemon=True).start()

    def make():
        import libsection
        if route == "build":
            return libsection.build([SLEEPY], inputs=["float64[:]"], outputs=["float64[:]"])
        if route == "class":
            class Sleepy(libsection.ExternalCOp):
                func_files = [SLEEPY]
                def output_types(self, x):
                    return [x]
            op = Sleepy()
            op.compiled("float64[:]")  # built now, not in the call
            return op
        import pytensor
        import pytensor.tensor as pt
        from pytensor.graph.basic import Apply
        from libsection.pytensor import ExternalCOp

        class Sleepy(ExternalCOp):
            __props__ = ()
            def __init__(self):
                super().__init__(SLEEPY)
            def make_node(self, x):
                x = pt.as_tensor_variable(x)
                return Apply(self, [x], [x.type()])
            def infer_shape(self, *args):
                return [args[-1][0]]

        x = pt.dvector("x")
        return pytensor.function([x], Sleepy()(x), mode=route)

    x = np.arange(5.0)
    print("ready", flush=True)
    try:
        f = make()
        if phase == "call":
            open("sleep-please", "w").close()
        result = f(x)
    except KeyboardInterrupt:
        print("KeyboardInterrupt reached the caller", flush=True)
    else:
        print("not interrupted", flush=True)
        sys.exit(1)
    # Nothing was torn down: the same op, or a new build of it, answers.
    if phase == "call":
        os.unlink("sleep-please")
    else:
        os.environ["CXX"] = os.environ["REAL_CXX"]
        f = make()
    assert np.array_equal(f(x), x)
    print("answers after the interrupt", flush=True)
    sys.exit(3)
    """
)

ROUTES = ["build", "class", "CVM", "FAST_COMPILE", "NUMBA", "JAX"]


def skip_missing(route: str) -> None:
    needs = {"NUMBA": "numba", "JAX": "jax"}.get(route)
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed on this stack")


def real_compiler() -> str:
    real = shutil.which("c++") or shutil.which("g++")
    assert real, "no C++ compiler on PATH"
    return real


def slow_compiler(folder: Path) -> Path:
    """A compiler that records its pid in `pids`, then sleeps a minute before compiling."""
    wrapper = folder / "slow-c++"
    wrapper.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            case "$1" in --version) exec {real_compiler()} --version ;; esac
            echo $$ >> {folder / "pids"}
            sleep 60
            exec {real_compiler()} "$@"
            """
        )
    )
    wrapper.chmod(0o755)
    return wrapper


def wait_for(path: Path, child: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 600  # a hang guard: JAX's first compile takes a while
    while not path.exists():
        if child.poll() is not None:
            out, err = child.communicate()
            pytest.fail(f"the child ended before {what}: {out}\n{err[-3000:]}")
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)


def interrupted(
    route: str, phase: str, tmp_path: Path, op: str = SLEEPY
) -> subprocess.CompletedProcess:
    """Runs the child for `route`, sends SIGINT once the op's call (or its compiler) started,
    and returns how it ended."""
    (tmp_path / "sleepy.c").write_text(op)
    env = {
        **os.environ,
        **({"SECOND_THREAD": "1"} if op is SLEEPY_AS_WRITTEN else {}),
        "LIBSECTION_CACHE_DIR": str(tmp_path / "cache"),
        "REAL_CXX": real_compiler(),
        "PYTENSOR_FLAGS": f"compiledir={tmp_path / 'pytensor'}",
    }
    if phase == "build":
        env["CXX"] = str(slow_compiler(tmp_path))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, route, phase],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(tmp_path / ("op-started" if phase == "call" else "pids"), child, f"the {phase}")
        time.sleep(0.2)  # well inside the call's sleep, or the compiler's
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=600)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


@pytest.mark.parametrize("op", [SLEEPY, SLEEPY_AS_WRITTEN], ids=["op-releases", "linker-releases"])
@pytest.mark.parametrize("route", ROUTES)
def test_sigint_during_a_first_call_reaches_the_caller(route, op, tmp_path):
    skip_missing(route)
    assert op is SLEEPY or "Py_BEGIN_ALLOW_THREADS" not in op
    done = interrupted(route, "call", tmp_path, op)
    assert "terminate called" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 3, (done.stdout, done.stderr[-3000:])
    assert done.stdout.split("\n")[1:3] == [
        "KeyboardInterrupt reached the caller",
        "answers after the interrupt",
    ], done.stdout


@pytest.mark.parametrize("route", ROUTES)
def test_sigint_during_a_build_reaches_the_caller(route, tmp_path):
    skip_missing(route)
    done = interrupted(route, "build", tmp_path)
    assert done.returncode == 3, (done.stdout, done.stderr[-3000:])
    assert done.stdout.split("\n")[1:3] == [
        "KeyboardInterrupt reached the caller",
        "answers after the interrupt",
    ], done.stdout
