"""section-expand: the c_* strings for a signature, as text or JSON; clear errors, exit 2."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import libsection

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "expand"
# The tutorial op in ops/, as the golden cases name it (relative to GOLDEN, where the tool runs).
VTV = "../../../ops/vector_times_vector/vectorTimesVector.c"
VTV_SIGNATURE = [
    "--inputs",
    "float64[:],float64[:]",
    "--outputs",
    "float64[:]",
    "--func-name",
    "APPLY_SPECIFIC(vector_times_vector)",
]


def section_expand():
    """The tool of the build whose package is imported (build/<dir>/tools/...), else PATH."""
    if "LIBSECTION_SECTION_EXPAND" in os.environ:
        return os.environ["LIBSECTION_SECTION_EXPAND"]
    build_root = Path(libsection.__file__).parent.parent.parent
    candidate = build_root / "tools" / "section-expand" / "section-expand"
    if candidate.is_file():
        return str(candidate)
    found = shutil.which("section-expand")
    if found is None:
        pytest.fail("section-expand not found: build it or set LIBSECTION_SECTION_EXPAND")
    return found


def run(*args, cwd=GOLDEN):
    return subprocess.run(
        [section_expand(), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--no-line-directives", "--no-newline-fix"], "vtv_float64.expected.json"),
        ([], "vtv_float64.line.expected.json"),
    ],
    ids=["reference-mode", "default"],
)
def test_json_output_equals_the_golden_expansion(flags, expected):
    result = run(VTV, *VTV_SIGNATURE, *flags, "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads((GOLDEN / expected).read_text())


def test_text_output_shows_every_method():
    result = run(
        "allsec_a.c",
        "allsec_b.c",
        "--inputs",
        "float64[:],float64[:]",
        "--outputs",
        "float64[:]",
        "--params",
        "k:int64",
    )
    assert result.returncode == 0, result.stderr
    for method in (
        "c_init_code[0]",
        "c_support_code",
        "c_init_code_apply",
        "c_support_code_apply",
        "c_support_code_struct",
        "c_cleanup_code_struct",
        "c_init_code_struct",
        "c_code",
        "c_code_cleanup",
        "c_code_cache_version",
    ):
        assert f"==> {method} <==\n" in result.stdout
    assert '#line 7 "allsec_b.c"' in result.stdout
    io_macros = "#define PARAMS V7\n#define INPUT_0 V5\n#define INPUT_1 V3\n#define OUTPUT_0 V1\n"
    assert io_macros in result.stdout


def test_padding_and_check_input_options():
    result = run(
        VTV,
        *VTV_SIGNATURE,
        "--num-inputs",
        "3",
        "--num-outputs",
        "2",
        "--no-check-input",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert "(V5, V3, NULL, &V1, NULL) != 0" in out["c_code"]
    assert "#define DTYPE_INPUT_0" not in out["c_support_code_apply"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [VTV, "--inputs", "float64[:],float64[:", "--outputs", "float64[:]"],
            "input 1 `float64[:`: expected `,` or `]` at the end of `float64[:],float64[:`",
        ),
        (
            [VTV, "--inputs", "float64[:],flot64[:]", "--outputs", "float64[:]"],
            "input 1 `flot64[:]`: unknown dtype `flot64`",
        ),
        (
            [VTV, "--inputs", "float64[:]", "--outputs", "float64[:]", "--params", "k=int64"],
            "param 0 `k=int64`: expected `name:type`",
        ),
        (["missing.c", "--inputs", "float64[:]"], "missing.c"),
        ([VTV, "--format", "yaml"], "--format"),
    ],
    ids=["bad-bracket", "bad-dtype", "bad-param", "missing-file", "bad-format"],
)
def test_bad_input_exits_2_naming_what_is_wrong(args, message):
    result = run(*args)
    assert result.returncode == 2
    assert message in result.stderr


def test_tag_errors_exit_2_with_the_parser_diagnostics(tmp_path):
    (tmp_path / "bad.c").write_text("#section support_code\nint a;\n#section suport_code_apply\n")
    result = run("bad.c", "--inputs", "float64[:]", cwd=tmp_path)
    assert result.returncode == 2
    assert "bad.c:3:" in result.stderr
    assert "Unknown section type (in file bad.c): suport_code_apply" in result.stderr


def test_a_code_section_with_a_function_name_exits_2():
    result = run(
        "allsec_a.c",
        "--inputs",
        "float64[:],float64[:]",
        "--outputs",
        "float64[:]",
        "--func-name",
        "f",
    )
    assert result.returncode == 2
    assert "SL604" in result.stderr


def test_help_exits_0():
    result = run("--help")
    assert result.returncode == 0
    assert "--inputs" in result.stdout


def test_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("section-expand "), result
