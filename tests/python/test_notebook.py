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
print("defined by the magic", vector_add(np.arange(3.0), np.ones(3)).tolist())
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

    # The magic wrote the cell where the op class finds it (an empty line in place of the
    # magic's), linted it at the cell's lines as the gutter counts them (the magic is line 1),
    # showed the expansion, and built the op as `vector_add`.
    assert (tmp_path / "vector_add.c").read_text() == "\n" + VECTOR_ADD.split("\n", 1)[1]
    assert "vector_add.c:3:15: warning: function `twice`" in texts[1]
    assert "[SL401]" in texts[1]
    assert "text/html" in texts[1] and "vector_add" in texts[1]  # the highlighted expansion
    assert "standalone [1.0, 2.0, 3.0]" in texts[2]
    assert "defined by the magic [1.0, 2.0, 3.0]" in texts[2]
    assert "graph [10.0, 20.0, 30.0]" in texts[3]
    # The compile error points at the cell's line 5, never at a generated source.
    assert "broken.c:5:" in texts[5] and "undeclared_name" in texts[5]
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


def run_notebook(tmp_path, cells):
    """Runs `cells` in a real kernel to the end, errors included: the executed notebook."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    return nb


def errors_of(cell) -> list[str]:
    """The cell's failure as the kernel reported it: `ename` of each error output, or
    `UsageError` for IPython's usage errors (a line on stderr)."""
    names = [o["ename"] for o in cell.outputs if o["output_type"] == "error"]
    for out in cell.outputs:
        if out.get("name") == "stderr" and out["text"].startswith("UsageError"):
            names.append("UsageError")
    return names


CELL_BODY = "#section support_code\nint a;\n"

USAGE_CELLS = [
    "%%section -h\n" + CELL_BODY,
    "%%section op.c --ouputs float64[:]\n" + CELL_BODY,
    "%%section --inputs float64[:]\n" + CELL_BODY,
    "%%section my-op.c --outputs float64[:]\n" + CELL_BODY,
    "%%section op.c --outputs float64[:] --params k:int64\n" + CELL_BODY,
]


def test_the_magics_usage_errors_are_one_clean_usage_error_each(tmp_path):
    """IPython's magic_arguments conventions: `-h` prints the usage once and runs nothing; a
    mistyped option, a missing file name, a file name that is no Python name and an op that
    cannot be built from the cell each give one UsageError saying what is wrong, and write
    nothing."""
    nb = run_notebook(tmp_path, ["%load_ext libsection", *USAGE_CELLS])
    help_cell, mistyped, no_name, bad_name, params = nb.cells[1:]
    help_text = outputs_text(help_cell)
    assert help_text.startswith("%%section [--inputs INPUTS]"), help_text
    assert help_text.count("%%section [") == help_text.count("--help") == 1, help_text
    assert "--outputs OUTPUTS" in help_text and "--no-build" in help_text, help_text
    assert errors_of(help_cell) == []
    for cell, said in [
        (mistyped, "UsageError: unrecognized arguments: --ouputs float64[:]\n"),
        (no_name, "UsageError: the following arguments are required: NAME.c\n"),
        (bad_name, "UsageError: %%section: 'my-op' is not a Python name: give --name NAME\n"),
        (params, "UsageError: %%section: an op with --params or --extra-sections is built"),
    ]:
        assert errors_of(cell) == ["UsageError"], cell.outputs
        assert outputs_text(cell).startswith(said), outputs_text(cell)
        assert "usage: usage" not in outputs_text(cell)
    assert not list(tmp_path.glob("*.c")), "a usage error wrote a file"


BUILT_BY_THE_MAGIC = """\
%%section add_one.c --inputs float64[:] --outputs float64[:]
#section code
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_ANYORDER);
if (NULL == OUTPUT_0) FAIL;
*(double*)PyArray_GETPTR1(OUTPUT_0, 0) += 1;
"""

COMPILE_ERROR = """\
%%section broken.c --inputs float64[:] --outputs float64[:] --func-name APPLY_SPECIFIC(broken)
#section support_code_apply
int APPLY_SPECIFIC(broken)(PyArrayObject* x, PyArrayObject** z)
{
    return undeclared_name;
}
"""

SECTION_ERROR = """\
%%section typo.c --inputs float64[:] --outputs float64[:]
#section suport_code_apply
int a;
"""


def test_the_magic_builds_the_op_and_shows_its_errors_in_the_cell(tmp_path, cache_dir):
    """As `%%cython` does: the cell builds the op and defines it at once (`add_one`, a
    libsection op). A compile error and a section error fail that cell itself, at the cell's
    lines as the notebook's gutter counts them (the magic line is 1), with libsection's class
    and message and none of its traceback frames."""
    nb = run_notebook(
        tmp_path,
        [
            "%load_ext libsection",
            BUILT_BY_THE_MAGIC,
            "import numpy as np\nprint('add_one', add_one(np.zeros(2)).tolist(), type(add_one))",
            COMPILE_ERROR,
            SECTION_ERROR,
        ],
    )
    built, call, compile_error, section_error = nb.cells[1:]
    assert errors_of(built) == [], built.outputs
    assert "add_one [1.0, 0.0] <class 'libsection._core.CompiledOp'>" in outputs_text(call)

    assert errors_of(compile_error) == ["CompileError"], compile_error.outputs
    (error,) = [o for o in compile_error.outputs if o["output_type"] == "error"]
    shown = "\n".join(error["traceback"])
    assert re.search(r"broken\.c:5:12: error: .*undeclared_name", shown), shown
    assert shown.startswith("CompileError: compiling broken failed"), shown
    # No frame: neither libsection's files nor the magic's call.
    assert "_magic.py" not in shown and "_build.py" not in shown, shown
    assert "run_cell_magic" not in shown and "Traceback" not in shown, shown

    # The linter's finding and the loader's error, both at the gutter's line 2.
    text = outputs_text(section_error)
    assert "typo.c:2:10: error: Unknown section type" in text, text
    assert errors_of(section_error) == ["SectionError"], section_error.outputs
    assert "_load.py" not in text and "Traceback" not in text, text


EDITED = """\
%%section add_k.c --inputs float64[:] --outputs float64[:]
#section code
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_ANYORDER);
if (NULL == OUTPUT_0) FAIL;
*(double*)PyArray_GETPTR1(OUTPUT_0, 0) += K;
"""


def test_an_edited_magic_cell_rebuilds_with_its_new_code(tmp_path, cache_dir):
    """The same cell run again with new code (same file, same size): the op it defines is
    rebuilt from the new code each time, and code that no longer compiles fails the cell and
    leaves no op of the old code defined."""
    cells = ["%load_ext libsection"]
    for k in (1, 2, 3):
        cells += [EDITED.replace("K", str(k)), "print('result', add_k(np.zeros(1))[0])"]
    cells.insert(1, "import numpy as np")
    cells += [EDITED.replace("K", "undeclared_k"), "print('still', add_k)"]
    nb = run_notebook(tmp_path, cells)
    texts = [outputs_text(c) for c in nb.cells]
    assert re.findall(r"result (\S+)", "".join(texts)) == ["1.0", "2.0", "3.0"], texts
    assert errors_of(nb.cells[-2]) == ["CompileError"], nb.cells[-2].outputs
    assert "add_k.c:6:43:" in texts[-2] and "undeclared_k" in texts[-2], texts[-2]
    # The op of the code before the edit is not left behind for later cells to run.
    assert errors_of(nb.cells[-1]) == ["NameError"], nb.cells[-1].outputs


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


BROKEN_OP_CLASS = """\
import numpy as np
import libsection

class Broken(libsection.ExternalCOp):
    func_files = ["broken.c"]
    func_name = "APPLY_SPECIFIC(broken)"

    def output_types(self, x):
        return ["float64[:]"]

y = Broken()(np.zeros(3))
"""

BROKEN_BY_BUILD = """\
f = libsection.build("broken.c", "APPLY_SPECIFIC(broken)",
                     inputs=["float64[:]"], outputs=["float64[:]"])
"""

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def shown_error(cell) -> str:
    """The cell's error as the notebook shows it, without colours."""
    (error,) = [o for o in cell.outputs if o["output_type"] == "error"]
    return ANSI.sub("", "\n".join(error["traceback"]))


def test_an_op_classs_compile_error_shows_the_users_call_and_the_compiler_not_libsection(
    tmp_path, cache_dir
):
    """As JAX hides its internals: the error of an op class called in a cell (and of
    libsection.build) shows the cell's line that called it and the compiler's message at the
    section file's line, and none of libsection's own frames (op.py, _build.py, ...)."""
    nb = run_notebook(tmp_path, ["%load_ext libsection", BROKEN, BROKEN_OP_CLASS, BROKEN_BY_BUILD])
    for cell, call in [
        (nb.cells[2], "y = Broken()(np.zeros(3))"),
        (nb.cells[3], "libsection.build("),
    ]:
        assert errors_of(cell) == ["CompileError"], cell.outputs
        shown = shown_error(cell)
        assert call in shown, shown
        assert re.search(r"broken\.c:5:12: error: .*undeclared_name", shown), shown
        frames = re.findall(r"^File (\S+?):\d+", shown, re.M)
        assert not [f for f in frames if "libsection" in f], shown
        for name in ("op.py", "_build.py", "_traceback.py", "_load.py"):
            assert name not in shown, shown
        assert len(shown.splitlines()) <= 20, shown  # the cell's lines, then the error


FUNCTION_STYLE = """\
%%section twice.c --inputs float64[:] --outputs float64[:]
#section support_code_apply
int APPLY_SPECIFIC(twice)(PyArrayObject* x, PyArrayObject** z) { return 0; }
"""


def test_a_function_style_cell_without_func_name_is_told_the_magics_option(tmp_path):
    """The magic's own option, --func-name, not build()'s func_name argument."""
    nb = run_notebook(tmp_path, ["%load_ext libsection", FUNCTION_STYLE])
    cell = nb.cells[1]
    assert errors_of(cell) == ["UsageError"], cell.outputs
    text = outputs_text(cell)
    assert "--func-name" in text, text
    assert "give func_name" not in text, text


def test_a_cell_pasted_with_a_byte_order_mark_builds(tmp_path, cache_dir):
    """A cell whose text starts with U+FEFF (pasted from a file saved "UTF-8 with BOM"): read
    as a file starting with the mark is, not as stray code before its first section."""
    cell = BUILT_BY_THE_MAGIC.replace("\n#section code", "\n\ufeff#section code", 1)
    nb = run_notebook(
        tmp_path,
        [
            "%load_ext libsection",
            cell,
            "import numpy as np\nprint('add_one', add_one(np.zeros(2)).tolist())",
        ],
    )
    built, call = nb.cells[1:]
    assert errors_of(built) == [], built.outputs
    assert "SectionError" not in outputs_text(built), outputs_text(built)
    assert "Stray code" not in outputs_text(built), outputs_text(built)
    assert "add_one [1.0, 0.0]" in outputs_text(call), call.outputs
