"""A real notebook, executed by nbclient in an ipykernel kernel: `%load_ext libsection`, section
code written with the `%%section` magic, an op defined in a cell and called standalone and in a
PyTensor graph, a lint finding and a compile error each at the right line of their cell, and
no progress output left in the saved notebook."""

from __future__ import annotations

import json
import re
import shutil

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is installed on the py312 stack")
nbclient = pytest.importorskip("nbclient", reason="nbclient is installed on the py312 stack")
pytest.importorskip("ipykernel", reason="ipykernel is installed with the test requirements")

MAGIC = (
    "%%section vector_add.c --inputs float64[:],float64[:] --outputs float64[:] "
    "--func-name APPLY_SPECIFIC(vector_add) --expand\n"
)
VECTOR_ADD = (
    MAGIC
    + """\
#section support_code_apply
static double twice(double v) { return 2 * v; }

int APPLY_SPECIFIC(vector_add)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (*z == NULL || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);
        if (*z == NULL) return 1;
    }
    double* pz = (double*)PyArray_DATA(*z);
    for (npy_intp i = 0; i < n; ++i)
        pz[i] = twice(0.5) * ((double*)PyArray_DATA(x))[i] + ((double*)PyArray_DATA(y))[i];
    return 0;
}
"""
)

STANDALONE = """\
import numpy as np
import libsection

class VectorAdd(libsection.ExternalCOp):
    func_files = ["vector_add.c"]
    func_name = "APPLY_SPECIFIC(vector_add)"

    def output_types(self, x, y):
        return ["float64[:]"]

print("standalone", VectorAdd()(np.arange(3.0), np.ones(3)).tolist())
"""

DROP_IN = """\
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from libsection.pytensor import ExternalCOp

class VectorAddOp(ExternalCOp):
    __props__ = ()

    def __init__(self):
        super().__init__(["vector_add.c"], "APPLY_SPECIFIC(vector_add)")

    def make_node(self, x, y):
        return Apply(self, [x, y], [pt.dvector()])

x, y = pt.dvector("x"), pt.dvector("y")
f = pytensor.function([x, y], VectorAddOp()(x, y) * 10, mode="CVM")
print("graph", f(np.arange(3.0), np.ones(3)).tolist())
"""

BROKEN = """\
%%section broken.c
#section support_code_apply
int APPLY_SPECIFIC(broken)(PyArrayObject* x, PyArrayObject** z)
{
    return undeclared_name;
}
"""

BUILD_BROKEN = """\
try:
    libsection.build(["broken.c"], "APPLY_SPECIFIC(broken)",
                     inputs=["float64[:]"], outputs=["float64[:]"])
except libsection.CompileError as e:
    print("compile error:", e)
"""


SLOW_BUILD = """\
import os
os.environ["CXX"] = os.path.abspath("slow-c++")  # a compile of 1.5 s: the progress line shows
libsection.build(["vector_add.c"], "APPLY_SPECIFIC(vector_add)",
                 inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
del os.environ["CXX"]
print("slow build done")
"""


SAMPLE = """\
import pymc as pm

with pm.Model():
    mu = pm.Normal("mu", 0, 10)
    z = VectorAddOp()(pt.as_tensor(np.zeros(3)), mu + np.zeros(3))
    pm.Potential("likelihood", -(z**2).sum())
    idata = pm.sample(draws=100, tune=100, chains=2, cores=2, step=pm.Metropolis(),
                      progressbar=False, compute_convergence_checks=False, random_seed=1)
print("sampled", idata.posterior["mu"].shape)
"""


def outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(out["text"])
        elif "data" in out:
            parts.append(json.dumps(out["data"]))
        elif out["output_type"] == "error":
            parts.append("\n".join(out["traceback"]))
    return "".join(parts)


def test_a_notebook_writes_lints_builds_and_runs_an_op(tmp_path, cache_dir):
    real = shutil.which("c++") or shutil.which("g++")
    wrapper = tmp_path / "slow-c++"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$1" in --version) exec {real} --version ;; esac\n'
        f'sleep 1.5\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    cells = [
        "%load_ext libsection",
        VECTOR_ADD,
        STANDALONE,
        DROP_IN,
        BROKEN,
        BUILD_BROKEN,
        SLOW_BUILD,
        SAMPLE,
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    texts = [outputs_text(c) for c in saved.cells]
    for cell, text in zip(cells, texts, strict=True):
        assert "Traceback" not in text, f"{cell.splitlines()[0]}: {text}"

    # The magic wrote the cell where the op class finds it, linted it at the cell's lines
    # (line 2 of the code after the magic line), and showed the expansion.
    assert (tmp_path / "vector_add.c").read_text() == VECTOR_ADD.split("\n", 1)[1]
    assert "vector_add.c:2:15: warning: function `twice`" in texts[1]
    assert "[SL401]" in texts[1]
    assert "text/html" in texts[1] and "vector_add" in texts[1]  # the highlighted expansion
    assert "standalone [1.0, 2.0, 3.0]" in texts[2]
    assert "graph [10.0, 20.0, 30.0]" in texts[3]
    # The compile error points at the cell's line 4, never at a generated source.
    assert "broken.c:4:" in texts[5] and "undeclared_name" in texts[5]
    assert "source.cpp:" not in texts[5].split("the generated source")[0]
    # The slow build's progress was one display, updated in place and emptied when done: the
    # saved notebook holds that one empty output and no progress text anywhere.
    assert "slow build done" in texts[6]
    displays = [o for o in saved.cells[6].outputs if o["output_type"] == "display_data"]
    assert len(displays) == 1, saved.cells[6].outputs
    assert displays[0]["data"]["text/plain"] == ""
    # PyMC's multiprocess sampling (cores=2) with the op class of a cell.
    assert "sampled (2, 100)" in texts[7], texts[7]
    for text in texts:
        assert not re.search(r"compiling \S+ \(\d+\.\d s\)", text) and "\r" not in text, text


ADD_K = """\
%%section add_k.c
#section code
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_ANYORDER);
if (NULL == OUTPUT_0) FAIL;
*(double*)PyArray_GETPTR1(OUTPUT_0, 0) += K;
"""

RUN_ADD_K = """\
import os
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
import libsection
from libsection.pytensor import ExternalCOp

# The clock did not move since the last cell wrote the file (a coarse clock, a fast re-run):
# it has the same time, and the same size.
os.utime("add_k.c", ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))

class AddK(ExternalCOp):
    __props__ = ()

    def __init__(self):
        super().__init__(["add_k.c"])

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

x = pt.dvector("x")
graph = pytensor.function([x], AddK()(x), mode="CVM")(np.zeros(1))[0]
alone = libsection.build(["add_k.c"], inputs=["float64[:]"], outputs=["float64[:]"])(np.zeros(1))[0]
print("results", graph, alone)
"""


def test_an_edited_cell_runs_its_new_code(tmp_path, cache_dir):
    """A `%%section` cell run again with new code of the same size within the same clock tick:
    the next op made from it runs the new code, in a PyTensor graph as standalone."""
    cells = ["%load_ext libsection"]
    for k in (1, 2, 3):
        cells += [ADD_K.replace("K", str(k)), RUN_ADD_K]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    texts = [outputs_text(c) for c in nb.cells]
    results = [m.groups() for t in texts for m in re.finditer(r"results (\S+) (\S+)", t)]
    assert results == [("1.0", "1.0"), ("2.0", "2.0"), ("3.0", "3.0")], texts


def test_a_cell_with_the_longest_name_is_written(tmp_path, monkeypatch):
    pytest.importorskip("IPython")
    from libsection import _magic

    monkeypatch.chdir(tmp_path)
    name = "n" * 253 + ".c"  # 255 bytes: its temporary file's name must still fit
    _magic.section(name, "#section support_code\nint a;\n")
    assert [p.name for p in tmp_path.iterdir()] == [name]


@pytest.mark.parametrize("blocker", ["a folder", "text that is not UTF-8"])
def test_a_cell_that_cannot_be_written_says_why_and_leaves_nothing(tmp_path, monkeypatch, blocker):
    """NAME.c a folder (the rename fails) or a cell holding a lone surrogate (the write fails
    half-way): a clear error, the folder as it was, no temporary file behind."""
    IPython = pytest.importorskip("IPython")
    from libsection import _magic

    monkeypatch.chdir(tmp_path)
    cell = "#section support_code\nint a;\n"
    if blocker == "a folder":
        (tmp_path / "op.c").mkdir()
    else:
        cell += "// \ud800\n"
    with pytest.raises(IPython.core.error.UsageError, match=r"cannot write .*op\.c"):
        _magic.section("op.c", cell)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == (["op.c"] if blocker == "a folder" else []), left
