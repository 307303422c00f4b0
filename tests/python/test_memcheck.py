"""valgrind memcheck on the example ops (ops/examples.py): one process builds and calls them under
memcheck, with Python's allocator off (PYTHONMALLOC=malloc) so every block is valgrind's to see.
No block is definitely lost, and no invalid read, write or free, nor a use of an uninitialised
value, has libsection's code on its stack (the core, _core*.so, or an op module from the cache).
Known findings in CPython, NumPy and glibc are suppressed by data/valgrind-python.supp; CPython
3.11's own uses of uninitialised values (none through libsection) are left to be reported, and
CPython 3.12's immortal interned strings, which memcheck counts as lost, are told apart by their
stacks.

The same process builds an op that is wrong on purpose (data/memcheck/leaky_sum.c), to show
that memcheck sees a leak and a read past a buffer inside an op module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SUPPRESSIONS = DATA / "valgrind-python.supp"
# The ops with one input, two outputs, params, and an error check.
FOLDERS = ["vector_times_vector", "sum_and_difference", "scale_shift", "checked_log"]

DRIVER = textwrap.dedent(f"""
    import json, sys
    import numpy as np
    import libsection
    sys.path.insert(0, {str(ROOT / "ops")!r})
    from examples import EXAMPLES
    for example in EXAMPLES:
        if example.folder in {FOLDERS!r}:
            op = example.op()
            for _ in range(3):
                got, want = op(*example.inputs()), example.expected(*example.inputs())
                for g, w in zip(got if isinstance(got, tuple) else (got,),
                                want if isinstance(want, tuple) else (want,)):
                    np.testing.assert_allclose(g, w, rtol=1e-12)
            print("ran", example.folder, flush=True)
    leaky = libsection.build({str(DATA / "memcheck" / "leaky_sum.c")!r},
                             "APPLY_SPECIFIC(leaky_sum)", inputs=["float64[:]"],
                             outputs=["float64"])
    assert leaky(np.arange(4.0)) == 6.0
    print(json.dumps(leaky.info), flush=True)
""")

MEMORY_ERRORS = {
    "InvalidRead",
    "InvalidWrite",
    "InvalidFree",
    "MismatchedFree",
    "Overlap",
    "UninitCondition",
    "UninitValue",
    "SyscallParam",
    "InvalidJump",
}


def libsection_frame(frame: ET.Element, cache: Path) -> bool:
    obj = frame.findtext("obj") or ""
    return bool(re.search(r"/libsection/_core[^/]*\.so$", obj)) or obj.startswith(str(cache))


def describe(error: ET.Element) -> str:
    frames = [
        f"{f.findtext('fn') or '?'} ({f.findtext('obj') or '?'})" for f in error.iter("frame")
    ]
    what = error.findtext("what") or error.findtext("xwhat/text") or ""
    return f"{error.findtext('kind')}: {what}\n    " + "\n    ".join(frames[:40])


@pytest.fixture(scope="module")
def memcheck(tmp_path_factory):
    """The driver's output, and memcheck's errors split into the leaky op's and all others."""
    if shutil.which("valgrind") is None:
        pytest.fail("valgrind not found: deps/install.sh installs it (deps/apt-packages.txt)")
    work = tmp_path_factory.mktemp("memcheck")
    cache = work / "cache"
    report = work / "memcheck.xml"
    env = dict(os.environ, PYTHONMALLOC="malloc", LIBSECTION_CACHE_DIR=str(cache))
    env.pop("LIBSECTION_DEBUG", None)
    argv = [
        "valgrind",
        "--tool=memcheck",
        "--error-exitcode=99",
        "--leak-check=full",
        "--num-callers=40",  # deep enough that a block libsection allocates shows its frame
        "--show-leak-kinds=definite",
        "--errors-for-leak-kinds=definite",
        f"--suppressions={SUPPRESSIONS}",
        "--xml=yes",
        f"--xml-file={report}",
        sys.executable,
        "-c",
        DRIVER,
    ]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 99), run.stderr[-3000:]  # 99: memcheck found errors
    last = (run.stdout.splitlines() or [""])[-1]
    assert last.startswith("{"), f"the driver did not finish:\n{run.stdout}{run.stderr[-3000:]}"
    leaky = json.loads(last)["library"]
    errors = ET.parse(report).getroot().findall("error")
    planted = [e for e in errors if any(f.findtext("obj") == leaky for f in e.iter("frame"))]
    others = [e for e in errors if e not in planted]
    return run, planted, others, cache


def test_the_ops_run_to_the_end_under_memcheck(memcheck):
    run, _, _, _ = memcheck
    ran = re.findall(r"^ran (\w+)$", run.stdout, re.M)
    assert ran == FOLDERS, run.stdout + run.stderr[-3000:]


def test_memcheck_sees_the_planted_leak_and_read_in_an_op_module(memcheck):
    _, planted, _, _ = memcheck
    kinds = sorted({e.findtext("kind") for e in planted})
    assert kinds == ["InvalidRead", "Leak_DefinitelyLost"], [describe(e) for e in planted]


def immortal(error: ET.Element) -> bool:
    """A block CPython 3.12+ keeps for the life of the process: an interned string (immortal,
    whoever asked for the name), or what an import made: names a module's init interns, and
    the strings of code objects read from a .pyc (marshal interns them too)."""
    names = {(f.findtext("fn") or "").lstrip("_") for f in error.iter("frame")}
    return bool(names & {"PyModule_ExecDef", "r_object"}) or any(
        n.startswith("PyUnicode_Intern") for n in names
    )


ALLOCATORS = ("malloc", "calloc", "realloc", "operator new", "operator new[]")


def allocated_by_libsection(error: ET.Element, cache: Path) -> bool:
    """Whether the first frame above the allocator is libsection's own code."""
    for frame in error.iter("frame"):
        if not (frame.findtext("fn") or "").startswith(ALLOCATORS):
            return libsection_frame(frame, cache)
    return False


def test_no_block_is_definitely_lost(memcheck):
    """None at all on CPython 3.11. From 3.12 on, interned strings are immortal and never freed,
    so memcheck reports them as lost (CPython's, NumPy's, and the names a module's import
    interns, strings Python code makes and caches): there, no block that libsection's own code
    allocated may be lost."""
    _, _, others, cache = memcheck
    lost = [e for e in others if e.findtext("kind") == "Leak_DefinitelyLost"]
    if sys.version_info >= (3, 12):
        lost = [e for e in lost if allocated_by_libsection(e, cache) and not immortal(e)]
    assert not lost, "\n".join(describe(e) for e in lost[:5])


def test_no_invalid_access_in_libsection_code(memcheck):
    _, _, others, cache = memcheck
    ours = [
        describe(e)
        for e in others
        if e.findtext("kind") in MEMORY_ERRORS
        and any(libsection_frame(f, cache) for f in e.iter("frame"))
    ]
    assert not ours, "\n".join(ours[:5])
