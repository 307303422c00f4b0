"""The runtime: the built-in types' glue, built with the package, shared by a process's modules.

Scalars and arrays that are inputs or outputs go through the runtime's node table; params
fields call its conversion from the instance's own code, with their own labels. The two must
agree on every value: what converts, to what, and the exception type and message of what does
not.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from libsection import _core, build

PASS_SCALAR = (
    "#section support_code_apply\n"
    "int APPLY_SPECIFIC(f)(DTYPE_INPUT_0 x, DTYPE_OUTPUT_0* out) {\n"
    "    *out = x;\n    return 0;\n}\n"
)
SAME_ARRAY = (
    "#section support_code_apply\n"
    "int APPLY_SPECIFIC(h)(PyArrayObject* x, PyArrayObject** out) {\n"
    "    Py_XDECREF(*out);\n    Py_INCREF(x);\n    *out = x;\n    return 0;\n}\n"
)
PARAM_SCALAR = (
    "#section support_code_apply\n"
    "int APPLY_SPECIFIC(g)(DTYPE_INPUT_0 x, DTYPE_OUTPUT_0* out, PARAMS_TYPE* params) {\n"
    "    *out = params->k;\n    return 0;\n}\n"
)

VALUES = [
    True,
    False,
    np.bool_(True),
    0,
    3,
    -1,
    127,
    128,
    -129,
    255,
    256,
    65535,
    2**31,
    2**40,
    2**63,
    2**64,
    -(2**63) - 1,
    1.5,
    -2.0,
    3.4e39,
    -3.4e39,
    math.inf,
    np.float32(2.5),
    np.int16(-7),
    "x",
    None,
]
DTYPES = ["bool", "int8", "uint8", "int16", "uint32", "int64", "uint64", "float32", "float64"]


def outcome(call, label):
    try:
        value = call()
    except (TypeError, OverflowError, ValueError) as e:
        return type(e), str(e).replace(label, "<label>")
    return (
        "ok",
        value.dtype,
        value.item()
        if not isinstance(value.item(), float) or not math.isnan(value.item())
        else "nan",
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_inputs_convert_and_fail_as_params_fields_do(tmp_path, dtype):
    (tmp_path / "pass.c").write_text(PASS_SCALAR)
    (tmp_path / "param.c").write_text(PARAM_SCALAR)
    through_runtime = build(tmp_path / "pass.c", "APPLY_SPECIFIC(f)", [dtype], [dtype])
    zero = False if dtype == "bool" else 0
    for value in VALUES:
        ours = outcome(lambda: through_runtime(value), "input 0")

        def generated():
            op = build(
                tmp_path / "param.c",
                "APPLY_SPECIFIC(g)",
                [dtype],
                [dtype],
                params={"k": (dtype, value)},
            )
            return op(zero)

        theirs = outcome(generated, "params field `k`")
        assert ours == theirs, (dtype, value)


SHARE = """
import json, sys
from pathlib import Path
import libsection
from libsection import _core, build
for dtype in ("int32", "float32"):
    assert build(sys.argv[1], "APPLY_SPECIFIC(f)", [dtype], [dtype])(2) == 2
entries = Path(_core.cache_dir()) / "entries"
maps = Path("/proc/self/maps").read_text().splitlines()
print(json.dumps({
    "ops": [json.loads(m.read_text())["ops"] for m in entries.glob("*/manifest.json")],
    "runtimes": sorted({line.split()[-1] for line in maps if line.endswith("_runtime.so")}),
    "package": str(Path(libsection.__file__).parent),
}))
"""


def test_modules_of_a_process_share_the_packaged_runtime(tmp_path):
    """In a process of its own: two modules compile, the runtime does not; one copy is loaded,
    the package's."""
    (tmp_path / "pass.c").write_text(PASS_SCALAR)
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", SHARE, str(tmp_path / "pass.c")],
        env=env, capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(seen["ops"]) == [["pass"], ["pass"]]
    assert seen["runtimes"] == [str(Path(seen["package"]) / "_runtime.so")]


def test_import_array_in_init_code_is_kept_and_needs_nothing(tmp_path):
    """PyTensor's TensorType puts `import_array()` in every module's init code; the module has
    the runtime's NumPy table by then, so it compiles to nothing, with or without its `;`."""
    (tmp_path / "init.c").write_text(
        "#section init_code\nimport_array()\nimport_array();\n" + PASS_SCALAR
    )
    op = build(tmp_path / "init.c", "APPLY_SPECIFIC(f)", ["int32"], ["int32"])
    assert op(5) == 5
    text = (Path(_core.cache_dir()) / "entries" / op.info["key"] / "source.cpp").read_text()
    assert "import_array()\nimport_array();" in text
    # NumPy's _import_array looks its table up by this capsule name: not compiled in.
    assert b"_ARRAY_API" not in Path(op.info["library"]).read_bytes()


def test_an_install_without_its_runtime_says_so_and_what_to_do(tmp_path):
    """A package whose _runtime.so is gone (a broken install) fails the first build with a
    LinkError naming the file, not a crash or a missing symbol."""
    import libsection

    copy = tmp_path / "site" / "libsection"
    shutil.copytree(Path(libsection.__file__).resolve().parent, copy, symlinks=False)
    (copy / "_runtime.so").unlink()
    (tmp_path / "pass.c").write_text(PASS_SCALAR)
    script = (
        "import libsection, sys\n"
        "try:\n"
        "    libsection.build(sys.argv[1], 'APPLY_SPECIFIC(f)', ['int32'], ['int32'])\n"
        "except libsection.LinkError as e:\n"
        "    print(e)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(copy.parent),
        "LIBSECTION_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "pass.c")],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert f"cannot load libsection's runtime {copy / '_runtime.so'}: " in out.stdout
    assert "reinstall libsection" in out.stdout


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_a_module_of_built_in_types_is_valid_c(tmp_path):
    """Its glue is the runtime's and its instance plain: only the op's code decides the language."""
    (tmp_path / "same.c").write_text(SAME_ARRAY)
    op = build(tmp_path / "same.c", "APPLY_SPECIFIC(h)", ["float64[:]"], ["float64[:]"])
    x = np.arange(3.0)
    assert op(x) is x
    source = Path(_core.cache_dir()) / "entries" / op.info["key"] / "source.cpp"
    text = source.read_text()
    assert "_import_array" not in text and "libsection_rt->extract(" in text
    includes = [f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}"]
    run = subprocess.run(
        [
            "cc",
            "-std=c99",
            "-Wall",
            "-Werror",
            "-Wno-unused-label",
            "-Wno-unused-function",
            "-fsyntax-only",
            *includes,
            "-x",
            "c",
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
