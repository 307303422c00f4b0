"""The linker core on the seeds' examples: Python-defined types and ops, the tutorial op,
failures and their cleanups, output reuse, compile errors."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from linker_ops import (
    DATA,
    VTV,
    VTV_FUNC,
    Add,
    CheckPositive,
    Double,
    FailSilently,
    Mul,
    TracedAdd,
    TracedDouble,
    TracedMul,
)
from test_language import compile_command

from libsection._build import CompileError, Module, build


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("LIBSECTION_CACHE_DIR", str(path))
    return path


@pytest.fixture
def vtv():
    return build(
        VTV,
        VTV_FUNC,
        inputs=["float64[:]", "float64[:]"],
        outputs=["float64[:]"],
        name="VectorTimesVector",
    )


def add_mul_module(type_=None, add=None, mul=None):
    double = type_ or Double()
    m = Module("add_mul")
    x, y, z = m.input(double, "x"), m.input(double, "y"), m.input(double, "z")
    (a,) = m.apply(add or Add(), [x, y], [double])
    (b,) = m.apply(mul or Mul(), [a, z], [double])
    return m, b


def test_python_defined_double_computes_x_plus_y_times_z():
    m, b = add_mul_module()
    f = m.compile([b])
    assert f(1.0, 2.0, 3.0) == 9.0
    assert f(-1.5, 0.5, 4.0) == -4.0


def test_double_rejects_a_non_float_with_its_own_message():
    m, b = add_mul_module()
    f = m.compile([b])
    with pytest.raises(TypeError, match="expected a float"):
        f(1.0, "2", 3.0)


def test_generated_module_nests_blocks_with_cleanup_labels():
    m, b = add_mul_module()
    source = m.source([b])
    # 5 variables and 2 applies: one nested block and label each, innermost (mul) first.
    labels = [line for line in source.splitlines() if line.startswith("__label_")]
    assert labels == [f"__label_{i}: ;" for i in (7, 6, 5, 4, 3, 2, 1)]
    assert "int __failure = 0;" in source
    assert source.index("// Op class Add") < source.index("// Op class Mul")


def test_a_graph_generates_its_module_once_for_prepare_link_and_source():
    from libsection import _core

    generated = []

    class CountingAdd(Add):
        def c_code(self, name, inputs, outputs, sub):
            generated.append(name)
            return super().c_code(name, inputs, outputs, sub)

    double = Double()
    g = _core.Graph()
    x, y = g.add_input(double, "x"), g.add_input(double, "y")
    (a,) = g.add_apply(CountingAdd(), [x, y], [double])
    g.add_output(a)
    _core.prepare(g, "counting")
    assert _core.link(g, [], "counting")(1.0, 2.0) == 3.0
    assert "// Op class CountingAdd" in g.source()
    assert len(generated) == 1
    g.add_input(double, "unused")  # a changed graph is generated again
    assert _core.link(g, [], "counting")(1.0, 2.0, 0.0) == 3.0
    assert len(generated) == 2


def test_failure_in_the_middle_node_runs_exactly_the_entered_cleanups():
    double = TracedDouble()
    m = Module("traced")
    x, y, z = m.input(double, "x"), m.input(double, "y"), m.input(double, "z")
    (a,) = m.apply(TracedAdd(), [x, y], [double])
    (b,) = m.apply(CheckPositive(), [a], [double])
    (c,) = m.apply(TracedMul(), [b, z], [double])
    f = m.compile([c])
    names = {v: f"V{v + 1}" for v in (x, y, z, a, b, c)}
    variables = [f"cleanup {names[v]}" for v in (c, b, a, z, y, x)]

    sys.linker_trace = []
    try:
        assert f(1.0, 2.0, 10.0) == 30.0
        assert (
            sys.linker_trace
            == ["cleanup TracedMul", "cleanup CheckPositive", "cleanup TracedAdd"] + variables
        )

        sys.linker_trace = []
        with pytest.raises(ValueError, match="CheckPositive: negative input"):
            f(1.0, -5.0, 10.0)
        # TracedMul never ran, so its cleanup must not either; everything entered is cleaned.
        assert sys.linker_trace == ["cleanup CheckPositive", "cleanup TracedAdd"] + variables

        sys.linker_trace = []
        assert f(2.0, 2.0, 0.5) == 2.0  # the instance is still usable after a failure
    finally:
        del sys.linker_trace


def test_failure_without_exception_becomes_runtime_error():
    double = Double()
    m = Module("silent")
    x = m.input(double, "x")
    (y,) = m.apply(FailSilently(), [x], [double])
    f = m.compile([y])
    with pytest.raises(RuntimeError, match="FailSilently .node 0.: C code failed without setting"):
        f(1.0)


def test_vector_times_vector_contiguous(vtv):
    x = np.arange(10, dtype=np.float64)
    y = np.linspace(-1, 1, 10)
    np.testing.assert_array_equal(vtv(x, y), x * y)


def test_vector_times_vector_strided(vtv):
    base_x = np.arange(30, dtype=np.float64)
    base_y = np.arange(60, dtype=np.float64)[::-1]
    x, y = base_x[::3], base_y[::6]
    assert not x.flags.c_contiguous and not y.flags.c_contiguous
    np.testing.assert_array_equal(vtv(x, y), x * y)


def test_shape_mismatch_raises_the_ops_value_error(vtv):
    with pytest.raises(
        ValueError, match=r"Shape mismatch : .*x.shape\[0\] == 3 and y.shape\[0\] == 4"
    ):
        vtv(np.ones(3), np.ones(4))


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            np.ones(3, dtype=np.float32),
            r"input 0: expected a float64\[:\] array .*got a 1-d float32",
        ),
        (np.ones((3, 1)), r"input 0: expected a float64\[:\] array .*got a 2-d float64"),
        ([1.0, 2.0, 3.0], r"input 0: expected a float64\[:\] array .*got list"),
    ],
)
def test_wrong_dtype_or_ndim_raises_type_error_before_the_op_runs(vtv, bad, message):
    # The op would raise ValueError on the length mismatch; the type check comes first.
    with pytest.raises(TypeError, match=message):
        vtv(bad, np.ones(5))


@pytest.mark.parametrize("n_inputs", [3, 40])
def test_an_op_with_many_inputs_counts_references_and_checks_each_input(tmp_path, n_inputs):
    # Past 32 variables the module's glue counts references out of line (its compile time
    # would otherwise grow faster than the module); both forms must hold and drop exactly the
    # references they take, and check every input with its own label.
    params = ", ".join(f"PyArrayObject* x{i}" for i in range(n_inputs))
    total = " + ".join(f"*(double*)PyArray_GETPTR1(x{i}, 0)" for i in range(n_inputs))
    path = tmp_path / "many.c"
    path.write_text(
        "#section support_code_apply\n"
        f"int APPLY_SPECIFIC(total)({params}, PyArrayObject** out) {{\n"
        "  if (*out == NULL)\n"
        "    *out = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x0), NPY_FLOAT64, 0);\n"
        "  if (*out == NULL) return 1;\n"
        f"  *(double*)PyArray_GETPTR1(*out, 0) = {total};\n"
        "  return 0;\n"
        "}\n"
    )
    op = build(
        path, "APPLY_SPECIFIC(total)", inputs=["float64[:]"] * n_inputs, outputs=["float64[:]"]
    )
    source = (Path(op.info["library"]).parent / "source.cpp").read_text()
    outline = "#define LIBSECTION_OUTLINE_REFS 1" in source
    assert outline == (n_inputs > 32)
    arrays = [np.full(1, float(i)) for i in range(n_inputs)]
    before = [sys.getrefcount(a) for a in arrays]
    for _ in range(50):
        out = op(*arrays)
    assert out[0] == sum(range(n_inputs))
    out_refs = sys.getrefcount(out)
    for _ in range(50):
        op(*arrays)
    assert [sys.getrefcount(a) for a in arrays] == before
    assert sys.getrefcount(out) <= out_refs  # the op may have let go of it; never more
    bad = list(arrays)
    bad[n_inputs - 2] = np.ones(1, dtype=np.float32)
    with pytest.raises(TypeError, match=rf"input {n_inputs - 2}: expected a float64\[:\] array"):
        op(*bad)
    del bad
    assert [sys.getrefcount(a) for a in arrays] == before


def test_wrong_number_of_inputs_or_keywords(vtv):
    with pytest.raises(TypeError, match="takes 2 inputs, got 1"):
        vtv(np.ones(3))
    with pytest.raises(TypeError, match="takes positional arguments only"):
        vtv(np.ones(3), y=np.ones(3))
    assert "VectorTimesVector(float64[:], float64[:]) -> float64[:]" in repr(vtv)


def test_outputs_are_reused_only_once_the_caller_lets_go(vtv):
    x, y = np.arange(4.0), np.full(4, 2.0)
    first = vtv(x, y)
    second = vtv(x, y)
    assert second is not first  # `first` was still held: the op had to allocate anew
    np.testing.assert_array_equal(first, x * y)
    identity = id(second)
    del first, second
    third = vtv(x + 1, y)
    assert id(third) == identity  # the dropped output came back to the op, which reused it
    np.testing.assert_array_equal(third, (x + 1) * y)


def test_build_info_and_second_build_in_process_uses_the_loaded_module(vtv):
    assert vtv.info["ops"] == ["VectorTimesVector"]
    assert vtv.info["inputs"] == ["float64[:]", "float64[:]"]
    again = build(
        VTV,
        VTV_FUNC,
        inputs=["float64[:]", "float64[:]"],
        outputs=["float64[:]"],
        name="VectorTimesVector",
    )
    assert again.info["compiled"] is False
    assert again.info["key"] == vtv.info["key"]


SCALE_SOURCE = (
    "#section support_code_apply\n"
    "int APPLY_SPECIFIC(scale)(PyArrayObject* x, npy_float64 shift, PyArrayObject** z,\n"
    "                          PARAMS_TYPE* params) {\n"
    "    Py_XDECREF(*z);\n"
    "    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);\n"
    "    if (!*z) return 1;\n"
    "    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i)\n"
    "        ((npy_float64*)PyArray_DATA(*z))[i] =\n"
    "            *(npy_float64*)PyArray_GETPTR1(x, i) * params->factor + shift\n"
    "            + *(DTYPE_PARAM_offsets*)PyArray_GETPTR1(params->offsets, i);\n"
    "    return 0;\n"
    "}\n"
)


def test_scalar_input_and_params_struct(tmp_path):
    src = tmp_path / "scale.c"
    src.write_text(SCALE_SOURCE)
    offsets = np.array([0.0, 10.0, 20.0, 30.0])
    f = build(
        src,
        "APPLY_SPECIFIC(scale)",
        inputs=["float64[:]", "float64"],
        outputs=["float64[:]"],
        params={"factor": ("int32", 3), "offsets": offsets},
    )
    np.testing.assert_array_equal(f(np.arange(4.0), 0.5), np.arange(4.0) * 3 + 0.5 + offsets)
    with pytest.raises(TypeError, match="input 1: expected a real number for float64"):
        f(np.arange(4.0), "x")


def test_bad_params_values_are_reported_when_the_op_is_instantiated(tmp_path):
    src = tmp_path / "scale.c"
    src.write_text(SCALE_SOURCE)
    signature = dict(inputs=["float64[:]", "float64"], outputs=["float64[:]"])
    with pytest.raises(TypeError, match="params field `factor`: expected an integer for int32"):
        build(
            src,
            "APPLY_SPECIFIC(scale)",
            **signature,
            params={"factor": ("int32", "three"), "offsets": np.zeros(4)},
        )
    with pytest.raises(OverflowError, match="params field `factor`: value out of range for int32"):
        build(
            src,
            "APPLY_SPECIFIC(scale)",
            **signature,
            params={"factor": ("int32", 2**40), "offsets": np.zeros(4)},
        )
    with pytest.raises(
        OverflowError, match="params field `factor`: value out of range for float32"
    ):
        build(
            src,
            "APPLY_SPECIFIC(scale)",
            **signature,
            params={"factor": ("float32", 1e300), "offsets": np.zeros(4)},
        )
    for held in (1.5, float("inf"), -3.4e38):  # float32 holds these: accepted, as a cast keeps them
        build(
            src,
            "APPLY_SPECIFIC(scale)",
            **signature,
            params={"factor": ("float32", held), "offsets": np.zeros(4)},
        )
    with pytest.raises(TypeError, match="params field `offsets`: expected a float64"):
        build(
            src,
            "APPLY_SPECIFIC(scale)",
            **signature,
            params={"factor": ("int32", 1), "offsets": ("float64[:]", np.zeros(4, dtype=np.int8))},
        )
    with pytest.raises(TypeError, match="cannot infer a C type for str"):
        build(src, "APPLY_SPECIFIC(scale)", **signature, params={"factor": "three"})


def test_compile_error_points_at_the_users_file_and_line(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text(
        "#section support_code_apply\n"
        "int APPLY_SPECIFIC(broken)(PyArrayObject* x, PyArrayObject** z) {\n"
        "    return undeclared_thing + 1;\n"
        "}\n"
    )
    with pytest.raises(CompileError) as info:
        build(src, "APPLY_SPECIFIC(broken)", inputs=["float64[:]"], outputs=["float64[:]"])
    error = info.value
    first = error.diagnostics[0]
    assert first.filename == str(src)
    assert first.line == 3
    assert "undeclared_thing" in first.message
    assert f"{src}:3:" in str(error)
    kept = error.kept_dir
    assert kept in str(error)
    assert Path(kept).parent == tmp_path / "cache" / "failed"
    for name in ("source.cpp", "build.log", "command.txt"):
        assert (Path(kept) / name).read_text()


# An op whose main function uses the generated macros, and one with a `code` section and params.
MACRO_OP = """#section support_code_apply
int APPLY_SPECIFIC(vector_add)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) {
    int typenum = TYPENUM_INPUT_1;
    DTYPE_OUTPUT_0* out = NULL;
    (void)typenum; (void)out; (void)x; (void)y; (void)z;
    return 0;
}
"""
CODE_OP = """#section code
if (PARAMS->k < 0) FAIL;
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_CORDER);
"""
TYPOS = [
    # typo, what it means, the op, the line of the typo
    ("DTYPE_OUPUT_0", "DTYPE_OUTPUT_0", MACRO_OP, 4),
    ("APPLY_SPECIFC", "APPLY_SPECIFIC", MACRO_OP, 2),
    ("TYPENUM_INTPUT_1", "TYPENUM_INPUT_1", MACRO_OP, 3),
    ("PARMS", "PARAMS", CODE_OP, 2),
    ("OUPUT_0", "OUTPUT_0", CODE_OP, 3),
]


def build_with_typo(tmp_path, typo, intended, op):
    src = tmp_path / "typo.c"
    src.write_text(op.replace(intended, typo, 1))
    with pytest.raises(CompileError) as info:
        if op is MACRO_OP:
            build(src, "APPLY_SPECIFIC(vector_add)", ["float64[:]"] * 2, ["float64[:]"])
        else:
            build(src, None, ["float64[:]"], ["float64[:]"], params={"k": ("int32", 1)})
    return src, info.value


@pytest.mark.parametrize(("typo", "intended", "op", "line"), TYPOS, ids=[t[0] for t in TYPOS])
def test_a_mistyped_generated_macro_is_told_at_the_users_line_with_a_did_you_mean(
    tmp_path, typo, intended, op, line
):
    src, error = build_with_typo(tmp_path, typo, intended, op)
    message = str(error)
    hint = f"note: `{typo}` is not a macro libsection defines; did you mean `{intended}`?"
    assert f"{src}:{line}:" in message
    assert any(f"{src}:{line}:" in text and hint in text for text in message.splitlines()), message
    # No line of the generated module is shown; the kept folder still is.
    assert not [text for text in message.splitlines() if "source.cpp" in text], message
    assert error.kept_dir in message
    assert any(hint.removeprefix("note: ") in d.notes for d in error.diagnostics)


def test_a_mistyped_main_function_is_told_as_the_op_s_not_its_generated_call(tmp_path, monkeypatch):
    src, error = build_with_typo(tmp_path, "APPLY_SPECIFC", "APPLY_SPECIFIC", MACRO_OP)
    message = str(error)
    told = (
        f"{src}:2:5: error: func_name names the op's main function `APPLY_SPECIFIC(vector_add)`, "
        "but no section file declares it"
    )
    assert told in message.splitlines()
    # The diagnostics still hold the compiler's error at the generated call, with what it means.
    generated = [d for d in error.diagnostics if d.filename.endswith("source.cpp")]
    assert generated and "vector_add_node_" in generated[0].message
    assert told.split("error: ")[1] in generated[0].notes
    # Asked for, the generated module's lines are shown as the compiler wrote them.
    monkeypatch.setenv("LIBSECTION_SHOW_GENERATED", "1")
    _, shown = build_with_typo(tmp_path, "APPLY_SPECIFC", "APPLY_SPECIFIC", MACRO_OP)
    assert re.search(r"/source\.cpp:\d+:\d+: error: .vector_add_node_", str(shown)), str(shown)
    assert told.replace(": error: ", ": note: ") in str(shown).splitlines()


# A build that cannot end: it includes a FIFO no one writes, or a device of endless zeros. Run in
# a process of its own, under a bound of its own on memory (in case the build's were missing).
UNENDING_BUILD = """
import json, os, resource, sys
import libsection
resource.setrlimit(resource.RLIMIT_DATA, (4 << 30, 4 << 30))
src, included = sys.argv[1], sys.argv[2]
with open(src, "w") as f:
    f.write('#section support_code\\n#include "' + included + '"\\n' + sys.argv[3])
try:
    libsection.build(src, "APPLY_SPECIFIC(vector_add)", ["float64[:]"] * 2, ["float64[:]"])
except libsection.CompileError as e:
    kept = os.path.join(e.kept_dir, "command.txt")
    print(json.dumps({"error": str(e), "kept": os.path.exists(kept)}))
"""


@pytest.mark.parametrize(
    ("included", "setting", "stopped"),
    [
        (
            "fifo",
            {"LIBSECTION_COMPILE_TIMEOUT": "2"},
            "was stopped after 2 s, the limit LIBSECTION_COMPILE_TIMEOUT sets",
        ),
        (
            "/dev/zero",
            {"LIBSECTION_COMPILE_MEMORY": "512M"},
            "ran out of the 512 MiB each compiler process may allocate, the limit "
            "LIBSECTION_COMPILE_MEMORY sets",
        ),
    ],
    ids=["fifo", "dev-zero"],
)
def test_a_build_that_cannot_end_is_stopped_and_told_as_its_compile_error(
    tmp_path, included, setting, stopped
):
    import json
    import os
    import subprocess

    if included == "fifo":
        included = str(tmp_path / "never-written")
        os.mkfifo(included)
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(tmp_path / "cache"), **setting}
    try:
        run = subprocess.run(
            [sys.executable, "-c", UNENDING_BUILD, str(tmp_path / "op.c"), included, MACRO_OP],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,  # a hang guard
        )
    finally:
        if not included.startswith("/dev/"):
            try:  # a compiler left reading the FIFO (were the build not stopped) ends
                os.close(os.open(included, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader: it was stopped
                pass
    assert run.returncode == 0, run.stderr
    said = json.loads(run.stdout)
    assert said["error"].startswith("compiling op failed: `"), said["error"]
    assert stopped in said["error"] and said["kept"], said["error"]


def test_bad_type_strings_name_the_problem():
    with pytest.raises(ValueError, match=r"inputs\[1\]: .*flaot64"):
        build(VTV, VTV_FUNC, inputs=["float64[:]", "flaot64[:]"], outputs=["float64[:]"])
    with pytest.raises(ValueError, match=r"outputs\[0\]: .*`\]`"):
        build(VTV, VTV_FUNC, inputs=["float64[:]", "float64[:]"], outputs=["float64[:"])


def test_missing_file_raises_os_error(tmp_path):
    with pytest.raises(OSError):
        build(tmp_path / "nope.c", "f", inputs=["float64[:]"], outputs=["float64[:]"])


def test_a_file_without_sections_raises_section_error(tmp_path):
    import libsection

    src = tmp_path / "plain.c"
    src.write_text("int main(void) { return 0; }\n")
    with pytest.raises(libsection.SectionError, match="No valid section marker was found"):
        libsection.build(src, "f", inputs=["float64[:]"], outputs=["float64[:]"])


def test_package_exports_the_linker_api():
    import libsection

    assert libsection.build is build
    assert libsection.CompileError is CompileError
    assert {"build", "Module", "CompileError", "LinkError", "CompiledOp"} <= set(libsection.__all__)


def test_code_section_op_with_two_outputs_returns_a_tuple():
    f = build(
        DATA / "sum_diff_code.c",
        inputs=["float64[:]", "float64[:]"],
        outputs=["float64[:]", "float64[:]"],
        name="SumDiff",
    )
    x, y = np.arange(5.0), np.arange(5.0)[::-1].copy()
    total, difference = f(x, y)
    np.testing.assert_array_equal(total, x + y)
    np.testing.assert_array_equal(difference, x - y)
    with pytest.raises(ValueError, match="sum_diff: inputs differ in length"):
        f(x, y[:2])


def test_scalar_output_comes_back_as_a_numpy_scalar():
    f = build(
        DATA / "dot.c",
        "APPLY_SPECIFIC(dot)",
        inputs=["float32[:]", "float32[:]"],
        outputs=["float32"],
    )
    x = np.arange(4, dtype=np.float32)
    result = f(x, x)
    assert isinstance(result, np.float32) and result == np.float32(14.0)


def test_compiler_launcher_wraps_the_compile_step_only(tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    launcher = tmp_path / "launcher"
    launcher.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\nexec "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setenv("LIBSECTION_COMPILER_LAUNCHER", str(launcher))
    f = build(
        DATA / "dot.c",
        "APPLY_SPECIFIC(dot)",
        inputs=["float64[:]", "float64[:]"],
        outputs=["float64"],
        name="DotThroughLauncher",
    )
    assert f(np.ones(3), np.ones(3)) == 3.0
    (line,) = calls.read_text().splitlines()  # one compile; the link runs without it
    assert " -c " in line and "-include" not in line  # no precompiled header with a launcher


BESSEL = """#section support_code_apply
#include <cmath>
int APPLY_SPECIFIC(j0)(DTYPE_INPUT_0 x, DTYPE_OUTPUT_0* out) {
    *out = std::cyl_bessel_j(0.0, x);
    return 0;
}
"""

ZETA_HEADER = "#include <cmath>\ninline double zeta(double s) { return std::riemann_zeta(s); }\n"


def test_special_math_functions_are_left_out_only_of_modules_that_cannot_use_them(
    tmp_path, monkeypatch
):
    # libstdc++ instantiates them in every C++ file: a module that names none leaves them out.
    # -Werror=invalid-pch: each module's precompiled header is one GCC accepts for it.
    monkeypatch.setenv("LIBSECTION_CXXFLAGS", "-Winvalid-pch -Werror=invalid-pch")
    f = build(VTV, VTV_FUNC, inputs=["float64[:]"] * 2, outputs=["float64[:]"])
    np.testing.assert_array_equal(f(np.arange(3.0), np.arange(3.0)), [0.0, 1.0, 4.0])
    assert "-DLIBSECTION_NO_SPECIAL_MATH" in compile_command(f)
    assert "-include" in compile_command(f)

    bessel = tmp_path / "bessel.c"
    bessel.write_text(BESSEL)
    j0 = build(bessel, "APPLY_SPECIFIC(j0)", inputs=["float64"], outputs=["float64"])
    assert j0(1.0) == pytest.approx(0.7651976865579666, rel=1e-12)
    assert "NO_SPECIAL_MATH" not in compile_command(j0)

    # A header of the op's own may use them where the module cannot see: it keeps them too.
    header = tmp_path / "zeta.h"
    header.write_text(ZETA_HEADER)
    zeta = tmp_path / "zeta.c"
    zeta.write_text(
        f'#section support_code_apply\n#include "{header}"\n'
        "int APPLY_SPECIFIC(z)(DTYPE_INPUT_0 s, DTYPE_OUTPUT_0* out) {\n"
        "    *out = zeta(s);\n    return 0;\n}\n"
    )
    z = build(zeta, "APPLY_SPECIFIC(z)", inputs=["float64"], outputs=["float64"])
    assert z(2.0) == pytest.approx(np.pi**2 / 6, rel=1e-12)
    assert "NO_SPECIAL_MATH" not in compile_command(z)


def test_a_file_included_by_the_toolchain_flags_may_use_special_math_functions(
    tmp_path, monkeypatch
):
    # The op's text names none, but LIBSECTION_CXXFLAGS includes a header that does: the
    # toolchain's flags come before the prelude, so that header's <cmath> has them all.
    header = tmp_path / "zeta.h"
    header.write_text(ZETA_HEADER)
    monkeypatch.setenv("LIBSECTION_CXXFLAGS", f"-include {header}")
    source = tmp_path / "uses_zeta.c"
    source.write_text(
        "#section support_code_apply\n"
        "int APPLY_SPECIFIC(z)(DTYPE_INPUT_0 s, DTYPE_OUTPUT_0* out) {\n"
        "    *out = zeta(s);\n    return 0;\n}\n"
    )
    z = build(source, "APPLY_SPECIFIC(z)", inputs=["float64"], outputs=["float64"])
    assert z(2.0) == pytest.approx(np.pi**2 / 6, rel=1e-12)
