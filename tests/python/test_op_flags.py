"""Per-op flags in the standalone API, by PyTensor's names: `c_compile_args`, `c_header_dirs`,
`c_libraries`, `c_lib_dirs` and `c_headers` as methods of `libsection.ExternalCOp` (and through
`pytensor_op` into PyTensor) and as keyword arguments of `build()` and `build_many()`. They are
part of the cache key and checked as `LIBSECTION_CXXFLAGS`'s words are; a `c_*` method the
standalone op would not call is refused when it is constructed."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import libsection

# z = x + FOO (a macro the flags define) + my_twice(1) (a header's) + my_seven() (a library's).
USES_FOO = """\
#section code
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_ANYORDER);
if (NULL == OUTPUT_0) FAIL;
*(double*)PyArray_GETPTR1(OUTPUT_0, 0) += FOO;
"""

USES_ALL = """\
#section support_code
extern "C" double my_seven(void);

#section code
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_ANYORDER);
if (NULL == OUTPUT_0) FAIL;
*(double*)PyArray_GETPTR1(OUTPUT_0, 0) += FOO + my_twice(1.0) + my_seven();
"""

VECTOR = ["float64[:]"]


@pytest.fixture
def project(tmp_path) -> Path:
    """An op's folder: its section files, a header of its own in include/, and a library of its
    own in lib/ (libmyseven.so)."""
    (tmp_path / "uses_foo.c").write_text(USES_FOO)
    (tmp_path / "uses_all.c").write_text(USES_ALL)
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "mytwice.h").write_text(
        "static inline double my_twice(double v) { return 2 * v; }\n"
    )
    (tmp_path / "lib").mkdir()
    (tmp_path / "myseven.c").write_text("double my_seven(void) { return 7; }\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler on PATH"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", tmp_path / "lib" / "libmyseven.so", tmp_path / "myseven.c"],
        check=True,
    )
    return tmp_path


def op_module(folder: Path, source: str):
    """A module defining op classes, in `folder` (relative paths of its classes start there)."""
    path = folder / "ops_here.py"
    path.write_text(textwrap.dedent(source))
    name = f"ops_here_{abs(hash(folder))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # where inspect finds the file that defines its classes
    spec.loader.exec_module(module)
    return module


ALL_FLAGS = """
import libsection

class UsesAll(libsection.ExternalCOp):
    func_files = ["uses_all.c"]

    def output_types(self, x):
        return [x]

    def c_compile_args(self, **kwargs):  # PyTensor's signature
        return ["-DFOO=42"]

    def c_header_dirs(self, **kwargs):
        return ["include"]  # beside this file, as func_files

    def c_headers(self, **kwargs):
        return ["mytwice.h"]

    def c_libraries(self, **kwargs):
        return ["myseven"]

    def c_lib_dirs(self, **kwargs):
        return ["lib"]
"""


def test_the_class_api_builds_with_its_flags_headers_and_libraries(project, cache_dir):
    op = op_module(project, ALL_FLAGS).UsesAll()
    assert op(np.zeros(2)).tolist() == [42 + 2 + 7, 0]
    flags = op.build_flags()
    assert flags["c_header_dirs"] == [str(project / "include")]
    assert flags["c_lib_dirs"] == [str(project / "lib")]


def test_build_takes_the_same_flags_as_keyword_arguments(project, cache_dir, monkeypatch):
    monkeypatch.chdir(project)  # relative folders start from the working directory
    op = libsection.build(
        ["uses_all.c"],
        inputs=VECTOR,
        outputs=VECTOR,
        c_compile_args=["-DFOO=42"],
        c_header_dirs=["include"],
        c_headers=["mytwice.h"],
        c_libraries=["myseven"],
        c_lib_dirs=[project / "lib"],
    )
    assert op(np.zeros(1)).tolist() == [51.0]
    (many,) = libsection.build_many(
        [
            dict(
                files=["uses_foo.c"],
                inputs=VECTOR,
                outputs=VECTOR,
                c_compile_args=["-DFOO=5"],
            )
        ]
    )
    assert many(np.zeros(1)).tolist() == [5.0]


def test_the_flags_are_part_of_the_cache_key(project, cache_dir):
    def built(value):
        return libsection.build(
            [project / "uses_foo.c"], inputs=VECTOR, outputs=VECTOR, c_compile_args=[value]
        )

    one, two = built("-DFOO=1"), built("-DFOO=2")
    assert one.info["key"] != two.info["key"]
    assert (one(np.zeros(1))[0], two(np.zeros(1))[0]) == (1.0, 2.0)
    assert built("-DFOO=1").info["key"] == one.info["key"]  # found again, not rebuilt


def test_pytensor_op_passes_the_flags_on(project, cache_dir):
    pytensor = pytest.importorskip("pytensor")
    import pytensor.tensor as pt

    from libsection.pytensor import pytensor_op

    op = op_module(project, ALL_FLAGS).UsesAll()
    x = pt.dvector("x")
    for mode in ["CVM", "FAST_COMPILE"]:
        f = pytensor.function([x], pytensor_op(op)(x), mode=mode)
        assert f(np.zeros(2)).tolist() == [51.0, 0.0], mode


@pytest.mark.parametrize(
    "flags, error, message",
    [
        (dict(c_compile_args=["-DFOO=1\n-DBAR"]), libsection.LinkError, "c_compile_args `-DFOO=1?"),
        (dict(c_compile_args=["-DFOO=1", "x\0y"]), libsection.LinkError, "byte 0x00 at offset 1"),
        (dict(c_libraries=["m\r"]), libsection.LinkError, "c_libraries `m?` holds a control"),
        (dict(c_lib_dirs=["a,--b"]), libsection.LinkError, "holds a comma"),
        (dict(c_headers=["a.h>\nint evil;"]), libsection.LinkError, "c_headers `a.h>?int evil;`"),
        (dict(c_headers=['"a.h" \\']), libsection.LinkError, "contains a backslash"),
        (dict(c_compile_args=["-DFOO=1", 3]), TypeError, r"c_compile_args\[1\] must be a string"),
        (dict(c_compile_args=7), TypeError, "c_compile_args must be a list of strings"),
        (dict(c_header_dirs=["no/such/folder"]), FileNotFoundError, "c_header_dirs"),
        (dict(c_lib_dirs=["no/such/folder"]), FileNotFoundError, "c_lib_dirs"),
        (dict(c_flags=["-O2"]), TypeError, "c_flags"),
    ],
)
def test_bad_flags_are_refused_naming_the_op_and_the_flag(
    project, cache_dir, monkeypatch, flags, error, message
):
    (project / "a,--b").mkdir()  # a folder that exists: the core refuses its name
    monkeypatch.chdir(project)
    with pytest.raises(error, match=message.replace("?", r"\?")) as raised:
        libsection.build(
            [project / "uses_foo.c"], inputs=VECTOR, outputs=VECTOR, name="UsesFoo", **flags
        )
    if error is libsection.LinkError:
        assert str(raised.value).startswith("UsesFoo: ")


def test_a_method_the_standalone_op_would_not_call_is_refused_when_constructed(project):
    module = op_module(
        project,
        """
        import libsection

        class WithSupportCode(libsection.ExternalCOp):
            func_files = ["uses_foo.c"]

            def output_types(self, x):
                return [x]

            def c_support_code(self, **kwargs):
                return "#define FOO 1"

            def c_code_cache_version(self):
                return (1,)
        """,
    )
    with pytest.raises(TypeError) as raised:
        module.WithSupportCode()
    message = str(raised.value)
    assert message.startswith(
        "WithSupportCode defines c_code_cache_version(), c_support_code(), which "
        "libsection.ExternalCOp does not call"
    )
    assert "libsection.pytensor.ExternalCOp" in message
