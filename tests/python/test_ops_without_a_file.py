"""Op classes defined where Python records no file (a notebook cell, a prompt, `python -c`,
a script on stdin): relative func_files resolve against the working directory, for the
standalone and the drop-in class alike, and a missing file says where it was looked for."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VTV = ROOT / "ops" / "vector_times_vector" / "vectorTimesVector.c"

STANDALONE = """
import numpy as np
import libsection

class VectorTimesVector(libsection.ExternalCOp):
    func_files = ["vectorTimesVector.c"]
    func_name = "APPLY_SPECIFIC(vector_times_vector)"

    def output_types(self, x, y):
        return [libsection.tensor(libsection.upcast(x, y), 1)]

print(VectorTimesVector()(np.arange(3.0), np.full(3, 2.0)).tolist())
"""

DROP_IN = """
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from libsection.pytensor import ExternalCOp

class VectorTimesVector(ExternalCOp):
    __props__ = ()

    def __init__(self):
        super().__init__(["vectorTimesVector.c"], "APPLY_SPECIFIC(vector_times_vector)")

    def make_node(self, x, y):
        return Apply(self, [x, y], [pt.dvector()])

x, y = pt.dvector("x"), pt.dvector("y")
f = pytensor.function([x, y], VectorTimesVector()(x, y), mode="FAST_COMPILE")
print(f(np.arange(3.0), np.full(3, 2.0)).tolist())
"""


def run(how: str, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", code] if how == "-c" else [sys.executable, "-"]
    return subprocess.run(
        argv,
        input=None if how == "-c" else code,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("how", ["-c", "stdin"])
@pytest.mark.parametrize("kind", ["standalone", "drop-in"])
def test_relative_func_files_resolve_against_the_working_directory(how, kind, tmp_path, cache_dir):
    if kind == "drop-in":
        pytest.importorskip("pytensor")
    shutil.copy(VTV, tmp_path / VTV.name)
    result = run(how, STANDALONE if kind == "standalone" else DROP_IN, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[0.0, 2.0, 4.0]"


@pytest.mark.parametrize("kind", ["standalone", "drop-in"])
def test_a_missing_file_says_where_it_was_looked_for_and_why(kind, tmp_path, cache_dir):
    if kind == "drop-in":
        pytest.importorskip("pytensor")
    result = run("stdin", STANDALONE if kind == "standalone" else DROP_IN, tmp_path)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("FileNotFoundError: "), last
    assert "section file 'vectorTimesVector.c' not found: looked in the working directory" in last
    assert "defined where Python records no file" in last
    assert str(tmp_path / "vectorTimesVector.c") in last
