"""Ops declared C (`language = "c"`): the declaration on the standalone op, the drop-in and
`build()`, its checks (SL208, SL209) on both routes and in section-lint, its place in the cache
version, the C compile path, and the refusal, never a silent switch to C++, while modules are
written as C++.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from examples import OPS_DIR
from test_section_lint import SECTION_LINT

import libsection
from libsection import _core

CXX_IN_C = """#section support_code_apply
int APPLY_SPECIFIC(f)(PyArrayObject* x, PyArrayObject** z) {
    PyArrayObject* none = nullptr;
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_ANYORDER);
    return *z == none;
}
"""

VTV = OPS_DIR / "vector_times_vector" / "vectorTimesVector.c"


def standalone(language, files=(VTV,)):
    class Declared(libsection.ExternalCOp):
        func_files = [str(f) for f in files]
        func_name = "APPLY_SPECIFIC(vector_times_vector)"

        def output_types(self, x, y):
            return ["float64[:]"]

    Declared.language = language
    return Declared


@pytest.mark.parametrize("bad", ["C", "cpp", "", None, 3])
def test_anything_but_c_or_cxx_names_the_op_and_the_accepted_values(bad):
    with pytest.raises(
        ValueError, match=r'Declared: language is .*give "c\+\+" \(the default\) or "c"'
    ):
        standalone(bad)()
    with pytest.raises(ValueError, match=r'vectorTimesVector: language is .*or "c"'):
        libsection.build(VTV, "APPLY_SPECIFIC(vector_times_vector)", ["float64[:]"] * 2,
                         ["float64[:]"], language=bad)  # fmt: skip


def test_cxx_stays_the_default_and_builds():
    op = standalone("c++")()
    assert libsection.ExternalCOp.language == "c++"
    np.testing.assert_array_equal(op(np.arange(3.0), np.ones(3)), np.arange(3.0))


def dropin_declared_c(path, **methods):
    """A drop-in op class declared C, of one input, from the file at `path`: its main function
    is `APPLY_SPECIFIC(f)`; `methods` are added to the class (`c_libraries`, say)."""
    import pytensor

    from libsection.pytensor import ExternalCOp

    class DeclaredC(ExternalCOp):
        language = "c"
        __props__ = ()

        def __init__(self):
            super().__init__([str(path)], "APPLY_SPECIFIC(f)")

        def make_node(self, x):
            return pytensor.graph.basic.Apply(self, [x], [x.type()])

    for name, method in methods.items():
        setattr(DeclaredC, name, method)
    return DeclaredC


def compile_command(op) -> str:
    """The compile command of a compiled op's module, from its cache entry's manifest."""
    manifest = Path(op.info["library"]).parent / "manifest.json"
    return json.loads(manifest.read_text())["compile_command"]


def test_the_tutorial_op_declared_c_is_compiled_as_c():
    op = standalone("c")()
    np.testing.assert_array_equal(op(np.arange(3.0), np.ones(3) * 2), [0.0, 2.0, 4.0])
    command = compile_command(op.compiled("float64[:]", "float64[:]"))
    assert " -x c " in command and "-std=gnu11" in command
    built = libsection.build(VTV, "APPLY_SPECIFIC(vector_times_vector)", ["float64[:]"] * 2,
                             ["float64[:]"], language="c")  # fmt: skip
    assert " -x c " in compile_command(built)
    cxx = libsection.build(VTV, "APPLY_SPECIFIC(vector_times_vector)", ["float64[:]"] * 2,
                           ["float64[:]"])  # fmt: skip
    assert " -x c++ " in compile_command(cxx)
    assert cxx.info["key"] != built.info["key"]


# A module compiles as a whole program (-fwhole-program, GCC): the op's functions are compiled
# once, inlined where they are called, and not again on their own.
GCC = "clang" not in subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout

EXPORTS = """#section support_code
__attribute__((visibility("default"))) int libsection_test_exported(void) { return 7; }

#section support_code_apply
int APPLY_SPECIFIC(f)(PyArrayObject* x, PyArrayObject** z) {
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_ANYORDER);
    return *z == NULL;
}
"""


@pytest.mark.skipif(not GCC, reason="-fwhole-program is GCC's")
def test_a_module_compiles_as_a_whole_program_unless_its_code_exports_a_symbol(tmp_path):
    import ctypes

    for language in ("c", "c++"):
        op = standalone(language)()
        np.testing.assert_array_equal(op(np.arange(3.0), np.ones(3)), np.arange(3.0))
        assert " -fwhole-program " in compile_command(op.compiled("float64[:]", "float64[:]"))
    # A symbol the op's code makes visible is meant to be seen: the module keeps it.
    path = tmp_path / "exports.c"
    path.write_text(EXPORTS)
    built = libsection.build(path, "APPLY_SPECIFIC(f)", ["float64[:]"], ["float64[:]"],
                             language="c")  # fmt: skip
    assert "-fwhole-program" not in compile_command(built)
    np.testing.assert_array_equal(built(np.arange(2.0)), np.arange(2.0))
    assert ctypes.CDLL(built.info["library"]).libsection_test_exported() == 7


TWICE = """#section support_code_apply
int APPLY_SPECIFIC(twice)(PyArrayObject* x, PyArrayObject** z) {
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_ANYORDER);
    if (*z == NULL) return 1;
    double* d = (double*)PyArray_DATA(*z);
    for (npy_intp i = 0; i < PyArray_SIZE(*z); ++i) d[i] *= 2;
    return 0;
}
"""


@pytest.mark.skipif(not GCC, reason="-fwhole-program is GCC's")
@pytest.mark.parametrize("language", ["c", "c++"])
def test_a_whole_program_compiles_the_ops_function_once(language, tmp_path, cache_dir):
    # The effect, read from the library's symbol table: in a whole program the op's function
    # is compiled once, into the module's run, with no copy of its own; the same code in a
    # module that is not one (its code exports a symbol) keeps the function's own copy too.
    def copies_of_the_function(text: str, name: str) -> list[str]:
        path = tmp_path / f"{name}.c"
        path.write_text(text)
        built = libsection.build(path, "APPLY_SPECIFIC(twice)", ["float64[:]"], ["float64[:]"],
                                 language=language)  # fmt: skip
        np.testing.assert_array_equal(built(np.arange(3.0)), [0.0, 2.0, 4.0])
        symbols = subprocess.run(
            ["nm", built.info["library"]], capture_output=True, text=True, check=True
        ).stdout
        assert "libsection_instance_run" in symbols  # a symbol table to read
        # A function's `.cold` part (its unlikely branches, placed apart) is no copy of it.
        return [
            line for line in symbols.splitlines() if "twice_" in line and not line.endswith(".cold")
        ]

    exported = EXPORTS.split("#section support_code_apply")[0]
    assert len(copies_of_the_function(exported + TWICE, "kept")) == 1
    assert copies_of_the_function(TWICE, "whole") == []


CALLS_BACK = """#section support_code
double libsection_test_callback(double x) { return x + 1.0; }
double libsection_test_twice_after(double x);

#section support_code_apply
int APPLY_SPECIFIC(f)(PyArrayObject* x, PyArrayObject** z) {
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_ANYORDER);
    if (*z == NULL) return 1;
    double* d = (double*)PyArray_DATA(*z);
    for (npy_intp i = 0; i < PyArray_SIZE(*z); ++i) d[i] = libsection_test_twice_after(d[i]);
    return 0;
}
"""


def test_an_op_linking_a_static_library_that_calls_back_into_it_builds(tmp_path, cache_dir):
    # BLAS's static libraries call `xerbla_` this way: a whole program would hide the op's
    # function from the library, so a module linking libraries is not compiled as one.
    pytest.importorskip("pytensor")
    import pytensor
    import pytensor.tensor as pt

    library = tmp_path / "lib"
    library.mkdir()
    (library / "twice.c").write_text(
        "double libsection_test_callback(double);\n"
        "double libsection_test_twice_after(double x) { return 2 * libsection_test_callback(x); }\n"
    )
    subprocess.run(["cc", "-fPIC", "-c", "twice.c", "-o", "twice.o"], cwd=library, check=True)
    subprocess.run(["ar", "rcs", "libtwice.a", "twice.o"], cwd=library, check=True)
    path = tmp_path / "op.c"
    path.write_text(CALLS_BACK)
    calls_back = dropin_declared_c(
        path, c_libraries=lambda self, **kw: ["twice"], c_lib_dirs=lambda self, **kw: [str(library)]
    )
    x = pt.dvector("x")
    f = pytensor.function([x], calls_back()(x), mode="CVM")
    np.testing.assert_array_equal(f(np.arange(3.0)), [2.0, 4.0, 6.0])
    manifests = [json.loads(m.read_text()) for m in cache_dir.glob("entries/*/manifest.json")]
    [built] = [m for m in manifests if "-ltwice" in m["link_command"]]
    assert " -x c " in built["compile_command"]
    assert "-fwhole-program" not in built["compile_command"]


def test_an_op_declared_c_whose_module_is_cxx_is_refused_never_switched():
    # Params are a constant of the module, held by the C++ instance struct: refused with why.
    with pytest.raises(libsection.LinkError, match=r'is declared C \(language = "c"\), but its '
                       r"module is C\+\+: its params"):  # fmt: skip
        libsection.build(VTV, "APPLY_SPECIFIC(vector_times_vector)", ["float64[:]"] * 2,
                         ["float64[:]"], {"k": 1.0}, language="c")  # fmt: skip


def test_cxx_in_a_file_declared_c_is_refused_at_its_line(tmp_path):
    path = tmp_path / "op.c"
    path.write_text(CXX_IN_C)
    with pytest.raises(libsection.LinkError) as caught:
        libsection.build(path, "APPLY_SPECIFIC(f)", ["float64[:]"], ["float64[:]"], language="c")
    assert "`nullptr` is C++ (and C23): write `NULL`" in str(caught.value)
    found = [(d.code, d.line) for d in caught.value.diagnostics]
    assert found == [("SL208", 3)]
    # Declared C++, the same file builds.
    op = libsection.build(path, "APPLY_SPECIFIC(f)", ["float64[:]"], ["float64[:]"])
    np.testing.assert_array_equal(op(np.arange(2.0)), np.arange(2.0))


def test_a_c_support_library_is_compiled_as_c():
    # Valid C that C++ rejects: `new` and `class` as names, a `void*` converted implicitly.
    code = """
static int new = 41;
static int class_of(int class) { return class + 1; }
__attribute__((visibility("default"))) int libsection_c_answer(void) {
    void* p = &new;
    int* q = p;
    bool yes = true;
    return yes ? class_of(*q) : 0;
}
__attribute__((visibility("default"))) int libsection_abi_version(void) {
    return LIBSECTION_MODULE_ABI;
}
__attribute__((visibility("default"))) PyObject* libsection_module_init(void) { return Py_None; }
__attribute__((visibility("default"))) PyObject* libsection_init(void) { return Py_None; }
__attribute__((visibility("default"))) void* libsection_instance_new(PyObject** s) {
    (void)s;
    return NULL;
}
__attribute__((visibility("default"))) int libsection_instance_run(void* s) { (void)s; return -1; }
__attribute__((visibility("default"))) void libsection_instance_free(void* s) { (void)s; }
"""
    import ctypes

    symbols, _ = _core.load_support_library(
        "c_support", code, [], ["libsection_c_answer"], language="c"
    )
    answer = ctypes.CFUNCTYPE(ctypes.c_int)(symbols["libsection_c_answer"])
    assert answer() == 42
    with pytest.raises(libsection.CompileError):
        _core.load_support_library("c_support", code, [], ["libsection_c_answer"])


def test_the_drop_in_declares_the_language_in_its_cache_version(tmp_path):
    pytest.importorskip("pytensor")
    from libsection.pytensor import ExternalCOp

    class DropIn(ExternalCOp):
        pass

    class DropInC(ExternalCOp):
        language = "c"

    args = ([str(VTV)], "APPLY_SPECIFIC(vector_times_vector)")
    as_cxx = DropIn(*args).c_code_cache_version()
    assert DropInC(*args).c_code_cache_version() != as_cxx
    DropIn.language = "c++"  # said, not defaulted: the same version
    assert DropIn(*args).c_code_cache_version() == as_cxx
    DropIn.language = "fortran"
    with pytest.raises(ValueError, match=r'DropIn: language is "fortran"'):
        DropIn(*args)


def test_the_drop_in_refuses_cxx_in_a_file_declared_c(tmp_path):
    pytest.importorskip("pytensor")
    import pytensor
    import pytensor.tensor as pt

    path = tmp_path / "op.c"
    path.write_text(CXX_IN_C)
    DeclaredC = dropin_declared_c(path)
    x = pt.dvector("x")
    with pytest.raises(ValueError, match="`nullptr` is C\\+\\+"):
        pytensor.function([x], DeclaredC()(x), mode="FAST_COMPILE")
    # C code passes the checks and runs, compiled as C, in the C backend too.
    path.write_text(CXX_IN_C.replace("nullptr", "NULL"))
    f = pytensor.function([x], DeclaredC()(x), mode="CVM")
    np.testing.assert_array_equal(f(np.arange(3.0)), np.arange(3.0))


@pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")
def test_section_lint_checks_files_as_c_when_asked(tmp_path):
    path = tmp_path / "op.c"
    path.write_text(CXX_IN_C)

    def lint(*args):
        return subprocess.run(
            [SECTION_LINT, "--isolated", "--output-format", "concise", *args, str(path)],
            capture_output=True,
            text=True,
        )

    assert lint().returncode == 0
    as_c = lint("--language", "c")
    assert as_c.returncode == 1
    assert "op.c:3:27: error: `nullptr` is C++" in as_c.stdout
    assert lint("--language", "fortran").returncode == 2
    assert lint("--language", "c", str(VTV)).returncode == 1  # the bad file; VTV's is C
    assert lint("--language", "c", "--select", "SL2").stdout.count("[SL208]") == 1


@pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")
def test_a_settings_signature_declares_the_language(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "op.c").write_text(CXX_IN_C)
    settings = '[tool.section-lint.signatures."ops/*.c"]\nlanguage = "c"\n'
    (tmp_path / "pyproject.toml").write_text(settings)

    def lint():
        return subprocess.run(
            [SECTION_LINT, "--output-format", "concise", "ops"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )

    assert "[SL208]" in lint().stdout
    (tmp_path / "pyproject.toml").write_text(settings.replace('"c"', '"C"'))
    refused = lint()
    assert refused.returncode == 2
    assert 'section-lint: language is "C"; give "c++" (the default) or "c"' in refused.stderr


def test_build_many_and_python_ops_declare_it_too():
    spec = {
        "files": VTV,
        "func_name": "APPLY_SPECIFIC(vector_times_vector)",
        "inputs": ["float64[:]"] * 2,
        "outputs": ["float64[:]"],
    }
    (built,) = libsection.build_many([{**spec, "language": "c"}], progress=False)
    assert " -x c " in compile_command(built)

    class Copy:
        language = "c"

        def c_code(self, name, inputs, outputs, sub):
            return f"{outputs[0]} = {inputs[0]};"

    m = libsection.Module("copy")
    x = m.input("float64")
    (y,) = m.apply(Copy(), [x], ["float64"])
    assert m.compile([y])(2.5) == 2.5
    assert " -x c " in compile_command(m.compile([y]))
    Copy.language = "pascal"
    m = libsection.Module("copy")
    x = m.input("float64")
    (y,) = m.apply(Copy(), [x], ["float64"])
    with pytest.raises(ValueError, match=r'Copy: language is "pascal"'):
        m.compile([y])


@pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")
def test_the_cell_magic_lints_a_cell_as_c(tmp_path, monkeypatch, capsys):
    pytest.importorskip("IPython")
    from libsection import _magic

    monkeypatch.setattr(_magic, "_tool", lambda name: SECTION_LINT)  # the linter under test
    monkeypatch.chdir(tmp_path)
    _magic.section("op.c", CXX_IN_C)
    assert "SL208" not in capsys.readouterr().out
    _magic.section("op.c --language c", CXX_IN_C)
    assert "`nullptr` is C++" in capsys.readouterr().out
