"""libsection.pytensor.ExternalCOp inside PyTensor: C backend runs, #line, loading, versions."""

import os
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.basic import Apply
from pytensor.link.c.exceptions import CompileError
from pytensor.link.c.op import ExternalCOp as PyTensorExternalCOp
from pytensor.link.c.params_type import ParamsType
from pytensor.link.c.type import generic
from pytensor.scalar import float64, int64
from pytensor.tensor.type import TensorType

from libsection.pytensor import ExternalCOp

DATA = Path(__file__).resolve().parent / "data" / "expand"
GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "expand"
VTV = Path(__file__).resolve().parents[2] / "ops" / "vector_times_vector" / "vectorTimesVector.c"
sys.path[:0] = [str(DATA), str(DATA / "subclass")]

from expand_ops import DoubleIt, UnaryVectorOp, VectorTimesVector
from relocated_ops import RelocatedDoubleIt

C_BACKEND = "CVM"


class PyTensorUnaryOp(PyTensorExternalCOp):
    """PyTensor's own ExternalCOp, as UnaryVectorOp uses ours."""

    __props__ = ()

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        raise NotImplementedError


# ------------------------------------------------------------------------- end to end


@pytest.mark.parametrize(
    ("x_dtype", "y_dtype"),
    [("float64", "float64"), ("float32", "float32"), ("int32", "int32"), ("float32", "int32")],
)
def test_tutorial_op_in_the_c_backend_equals_numpy(x_dtype, y_dtype):
    x = pt.vector("x", dtype=x_dtype)
    y = pt.vector("y", dtype=y_dtype)
    f = pytensor.function([x, y], VectorTimesVector()(x, y), mode=C_BACKEND)
    # Integer values: exact in every dtype, whatever precision the C product is computed in.
    rng = np.random.default_rng(0)
    a = rng.integers(-100, 100, 7).astype(x_dtype)
    b = rng.integers(-100, 100, 7).astype(y_dtype)
    result = f(a, b)
    np.testing.assert_array_equal(result, a * b)
    assert result.dtype == (a * b).dtype
    # strided inputs
    a2 = rng.integers(-100, 100, 14).astype(x_dtype)[::2]
    np.testing.assert_array_equal(f(a2, b), a2 * b)
    with pytest.raises(ValueError, match="Shape mismatch"):
        f(a, b[:3])


def test_code_section_op_compiles_and_runs_as_the_last_node():
    x = pt.dvector("x")
    f = pytensor.function([x], DoubleIt()(x), mode=C_BACKEND)
    a = np.arange(5.0)
    np.testing.assert_array_equal(f(a), 2 * a)


def test_pytensor_own_code_section_op_fails_when_the_node_is_last():
    """The bug the newline fix removes: PyTensor's `c_code` ends without a newline, so the C
    linker glues the next label onto its last `#undef` line."""
    x = pt.dvector("x")
    with pytest.raises(CompileError, match="__label_"):
        pytensor.function([x], PyTensorUnaryOp(str(DATA / "double_it.c"))(x), mode=C_BACKEND)


class AllSections(ExternalCOp):
    """The golden all-sections op: nine sections over two files, params, a `code` section."""

    __props__ = ("k",)
    params_type = ParamsType(k=int64)

    def __init__(self, k):
        self.k = k
        super().__init__([str(GOLDEN / "allsec_a.c"), str(GOLDEN / "allsec_b.c")])

    def make_node(self, x, y):
        x = pt.as_tensor_variable(x)
        y = pt.as_tensor_variable(y)
        return Apply(self, [x, y], [x.type()])


def test_an_op_using_all_nine_sections_compiles_and_runs():
    x, y = pt.dvectors("x", "y")
    f = pytensor.function([x, y], AllSections(3)(x, y), mode=C_BACKEND)
    a, b = np.arange(4.0), np.arange(4.0) + 1
    np.testing.assert_array_equal(f(a, b), a * b + 3)
    with pytest.raises(ValueError, match="inputs differ in length"):
        f(a, b[:2])


class ScaleShift(ExternalCOp):
    """The golden several-field ParamsType op."""

    __props__ = ("alpha", "k")
    params_type = ParamsType(
        offset=TensorType("float64", shape=(None,)), k=int64, alpha=float64, extra=generic
    )

    def __init__(self, alpha, k, offset):
        self.alpha, self.k, self.offset, self.extra = alpha, k, offset, "unused"
        super().__init__(str(GOLDEN / "params.c"), "APPLY_SPECIFIC(scale_shift)")

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])


def test_an_op_with_several_params_fields_compiles_and_runs():
    x = pt.dvector("x")
    offset = np.array([0.5, 1.5, 2.5])
    f = pytensor.function([x], ScaleShift(2.0, 3, offset)(x), mode=C_BACKEND)
    np.testing.assert_array_equal(f(np.arange(3.0)), 2.0 * np.arange(3.0) + 3 + offset)
    # FAIL inside init_code_struct: the struct is initialised when the thunk is made.
    with pytest.raises(ValueError, match="k must not be negative"):
        pytensor.function([x], ScaleShift(2.0, -1, offset)(x), mode=C_BACKEND)


def test_a_c_error_is_reported_at_the_section_file_and_line():
    broken = DATA / "broken.c"
    x = pt.dvector("x")
    op = UnaryVectorOp(str(broken), "APPLY_SPECIFIC(broken)")
    with pytest.raises(CompileError) as error:
        pytensor.function([x], op(x), mode=C_BACKEND)
    assert f"{broken}:5:" in str(error.value)
    assert "undeclared_identifier_in_broken_c" in str(error.value)


def test_a_call_that_does_not_match_the_function_is_reported_at_its_declaration():
    """An error in the generated call is told at the main function's declaration; the compiler's
    error at the call stays a diagnostic, pointing into the kept module source."""
    x = pt.dvector("x")
    op = UnaryVectorOp(str(VTV), "APPLY_SPECIFIC(vector_times_vector)")
    with pytest.raises(CompileError) as error:
        pytensor.function([x], op(x), mode=C_BACKEND)
    message = str(error.value)
    assert re.search(
        rf"^{re.escape(str(VTV))}:25:\d+: error: the generated call of the op's main function "
        r"`APPLY_SPECIFIC\(vector_times_vector\)` \(func_name\) does not match its "
        r"declaration: cannot convert",
        message,
        re.M,
    ), message
    assert "source.cpp:" not in message
    at_call = [d for d in error.value.diagnostics if d.message.startswith("cannot convert")]
    assert at_call and at_call[0].filename.endswith("/source.cpp")
    line = Path(at_call[0].filename).read_text().splitlines()[at_call[0].line - 1]
    assert "APPLY_SPECIFIC(vector_times_vector)(V1, &V2)" in line


def test_without_line_directives_the_error_is_in_the_generated_module(monkeypatch):
    class NoLines(UnaryVectorOp):
        line_directives = False

    x = pt.dvector("x")
    op = NoLines(str(DATA / "broken.c"), "APPLY_SPECIFIC(broken)")
    with pytest.raises(CompileError) as error:
        pytensor.function([x], op(x), mode=C_BACKEND)
    message = str(error.value)
    assert "broken.c:" not in message
    # One line says what failed there, without the module's lines unless they are asked for.
    assert re.search(
        r"^error in the generated module: .undeclared_identifier_in_broken_c", message, re.M
    )
    assert "/source.cpp:" not in message
    monkeypatch.setenv("LIBSECTION_SHOW_GENERATED", "1")
    with pytest.raises(CompileError) as error:
        pytensor.function([x], op(x), mode=C_BACKEND)
    assert "/source.cpp:" in str(error.value)  # the kept module source


# ------------------------------------------------------------------------- the class


def test_has_pytensor_externalcop_attributes():
    ours = VectorTimesVector()
    theirs = PyTensorUnaryOp(str(VTV), ours.func_name)
    assert ours.func_files == [Path(VectorTimesVector.func_file)]
    assert ours.func_codes == theirs.func_codes
    assert ours.code_sections == theirs.code_sections
    assert ours.func_name == "APPLY_SPECIFIC(vector_times_vector)"
    assert ours._cop_num_inputs is None and ours._cop_num_outputs is None
    assert ExternalCOp.line_directives is True
    assert ours.params_type is None


def test_constructs_without_any_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        VectorTimesVector()
    assert caught == []


def test_relative_paths_resolve_against_the_runtime_class_file():
    assert "2 *" in DoubleIt().code_sections["code"]
    relocated = RelocatedDoubleIt()
    assert relocated.func_files == [Path("double_it.c")]
    assert "3 *" in relocated.code_sections["code"]
    assert str(DATA / "subclass" / "double_it.c") in relocated.c_code(*code_args(relocated))


def code_args(op, n_inputs=1):
    """The arguments of `c_code` for a node of `op` on float64 vectors."""
    node = op.make_node(*[pt.dvector() for _ in range(n_inputs)])
    sub = {"fail": "FAIL_CODE", "failure_var": "__failure", "id": 7}
    names = [f"V{2 * i + 3}" for i in range(n_inputs)]
    return node, "node_x_0", names, ["V1"], sub


def test_ops_reading_the_same_texts_share_one_parse():
    assert VectorTimesVector()._loaded is VectorTimesVector()._loaded


ADD_K = """\
#section code
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_ANYORDER);
if (NULL == OUTPUT_0) FAIL;
*(double*)PyArray_GETPTR1(OUTPUT_0, 0) += K;
"""


@pytest.mark.parametrize("mode", ["CVM", "FAST_COMPILE"])
def test_a_file_rewritten_with_the_same_size_and_time_runs_its_new_code(tmp_path, mode, cache_dir):
    """A file is known by what it holds: rewritten within the clock's resolution (its time
    unchanged, set here as a coarse clock would leave it) with the same size, the next op
    made from it runs the new code."""
    path = tmp_path / "add_k.c"
    x = pt.dvector("x")
    results = []
    for k in (1, 2, 3):
        path.write_text(ADD_K.replace("K", str(k)))
        os.utime(path, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))
        f = pytensor.function([x], UnaryVectorOp(str(path))(x), mode=mode)
        results.append(f(np.zeros(2))[0])
    assert results == [1.0, 2.0, 3.0]


def test_an_edited_file_is_parsed_again(tmp_path):
    path = tmp_path / "op.c"
    path.write_text("#section support_code\nint a;\n")
    before = UnaryVectorOp(str(path))
    path.write_text("#section support_code\nint changed;\n")
    after = UnaryVectorOp(str(path))
    assert before.c_support_code().endswith(
        'int a;\n#line 4 "<libsection-generated> c_support_code"\n'
    )
    assert "int changed;" in after.c_support_code()


def test_pickles_with_its_code_and_expands_the_same_after_unpickling():
    op = VectorTimesVector()
    clone = pickle.loads(pickle.dumps(op))
    assert clone.func_codes == op.func_codes
    node_and_name = code_args(op, n_inputs=2)[:2]
    assert clone.c_support_code_apply(*node_and_name) == op.c_support_code_apply(*node_and_name)
    assert clone.c_code_cache_version() == op.c_code_cache_version()


@pytest.mark.parametrize(
    "write",
    [
        lambda p: None,  # missing file
        lambda p: p.write_text("#section suport_code\nint a;\n"),
        lambda p: p.write_text("int stray;\n#section support_code\n"),
        lambda p: p.write_text("no marker at all\n"),
    ],
    ids=["missing", "unknown-tag", "stray-code", "no-marker"],
)
def test_load_errors_are_the_reference_errors(tmp_path, write):
    path = str(tmp_path / "op.c")
    write(tmp_path / "op.c")
    with pytest.raises(Exception) as theirs:
        PyTensorUnaryOp(path)
    with pytest.raises(type(theirs.value)) as ours:
        UnaryVectorOp(path)
    if theirs.type is FileNotFoundError:
        assert ours.value.filename == path
    else:
        # The reference's message, then libsection's located diagnostics.
        assert str(ours.value).startswith(str(theirs.value))


def test_no_files_is_the_reference_error():
    with pytest.raises(ValueError, match="^No sections where defined in the C files"):
        ExternalCOp([])


def test_a_code_section_with_a_func_name_fails_in_c_code_as_in_pytensor():
    op = UnaryVectorOp(str(DATA / "double_it.c"), "APPLY_SPECIFIC(f)")
    with pytest.raises(AssertionError, match="`code` section"):
        op.c_code(*code_args(op))


def test_no_code_section_and_no_func_name_is_not_implemented():
    op = UnaryVectorOp(str(DATA / "broken.c"))
    with pytest.raises(NotImplementedError):
        op.c_code(*code_args(op))


# ------------------------------------------------------------------------- cache version

VERSION_SCRIPT = f"""
import sys
sys.path[:0] = [{str(DATA)!r}]
from expand_ops import VectorTimesVector
print(VectorTimesVector().c_code_cache_version())
"""


def version_in_new_process(seed):
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    run = subprocess.run(
        [sys.executable, "-c", VERSION_SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return run.stdout.strip()


def test_cache_version_is_the_same_across_processes_and_hash_seeds():
    first = version_in_new_process(1)
    assert first == version_in_new_process(2)
    assert first == str(VectorTimesVector().c_code_cache_version())


def test_cache_version_changes_with_the_function_name_and_the_file(tmp_path):
    path = tmp_path / "op.c"
    path.write_text("#section support_code_apply\nint f(void) { return 0; }\n")
    base = UnaryVectorOp(str(path), "f").c_code_cache_version()
    assert UnaryVectorOp(str(path), "f").c_code_cache_version() == base
    assert UnaryVectorOp(str(path), "g").c_code_cache_version() != base
    path.write_text("#section support_code_apply\nint f(void) { return 1; }\n")
    assert UnaryVectorOp(str(path), "f").c_code_cache_version() != base


def test_cache_version_includes_the_params_type_version():
    class WithParams(UnaryVectorOp):
        params_type = ParamsType(k=int64)
        k = 3

    op = WithParams(str(VTV), "f")
    version = op.c_code_cache_version()
    assert len(version) == 2
    assert version[1] == op.params_type.c_code_cache_version()
    without_params = UnaryVectorOp(str(VTV), "f")
    assert version[0] != without_params.c_code_cache_version()[0]
