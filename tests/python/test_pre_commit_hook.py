"""The pre-commit hook we publish: it runs section-lint on staged .c files, leaves plain C files
alone (`--marked-only`), and the README's way of restricting it to some ops works."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
import yaml
from test_section_lint import ROOT, SECTION_LINT, write

pytestmark = pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")

PLAIN = '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n'
BAD_SECTION = "#section code\nreturn 1;\n"  # SL501
LEGACY = "THEANO_APPLY_CODE_SECTION\nreturn 1;\n"
MALFORMED = "# section cdoe\nint x;\n"


def hook() -> dict:
    (only,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return only


def selected(pattern: str, path: str) -> bool:
    return re.search(pattern, path) is not None  # pre-commit's `files:` is re.search on the path


def run_hook(files, cwd):
    """The hook as pre-commit runs it: its entry, then the staged files it selected."""
    h = hook()
    chosen = [f for f in files if selected(h["files"], f)]
    argv = shlex.split(h["entry"])
    assert argv[0] == "section-lint"
    return subprocess.run(
        [SECTION_LINT, *argv[1:], *chosen], cwd=cwd, capture_output=True, text=True
    )


def test_the_hook_declares_c_files_only():
    h = hook()
    assert h["id"] == "section-lint" and h["language"] == "python"
    assert h["types"] == ["c"]
    assert "--marked-only" in shlex.split(h["entry"])
    for path in ("op.c", "ops/vector_add/vector_add.c"):
        assert selected(h["files"], path), path
    for path in ("op.h", "op.cpp", "setup.py", "op.c.orig", "notes.cfg"):
        assert not selected(h["files"], path), path


def test_the_hook_lints_section_files_and_leaves_plain_c_alone(tmp_path):
    write(tmp_path / "src/main.c", PLAIN)
    write(tmp_path / "ops/bad/bad.c", BAD_SECTION)
    staged = ["src/main.c", "ops/bad/bad.c", "setup.py"]
    result = run_hook(staged, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ops/bad/bad.c:2:1" in result.stdout and "[SL501]" in result.stdout
    assert "main.c" not in result.stdout
    # Without --marked-only the plain file is a finding: the flag is what keeps it out.
    plain = subprocess.run(
        [SECTION_LINT, "src/main.c"], cwd=tmp_path, capture_output=True, text=True
    )
    assert plain.returncode == 1 and "[SL203]" in plain.stdout


def test_marked_only_keeps_legacy_and_malformed_markers_and_expands_folders(tmp_path):
    write(tmp_path / "op/plain.c", PLAIN)
    write(tmp_path / "op/legacy.c", LEGACY)
    write(tmp_path / "op/typo.c", MALFORMED)
    result = subprocess.run(
        [SECTION_LINT, "--marked-only", "--output-format", "concise", "op"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    files = {line.split(":", 1)[0] for line in result.stdout.splitlines() if "[SL" in line}
    assert files == {"op/legacy.c", "op/typo.c"}, result.stdout
    only_plain = subprocess.run(
        [SECTION_LINT, "--marked-only", "op/plain.c"], cwd=tmp_path, capture_output=True, text=True
    )
    assert only_plain.returncode == 0, only_plain.stdout


def test_the_readme_shows_how_to_restrict_the_hook_to_some_ops():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```yaml\n(.*?- id: section-lint.*?)```", readme, re.S)
    assert block, "the README has no pre-commit configuration for section-lint"
    config = yaml.safe_load(block.group(1))
    (repo,) = config["repos"]
    (entry,) = repo["hooks"]
    assert entry["id"] == "section-lint"
    assert selected(entry["files"], "ops/vector_add/vector_add.c")
    assert not selected(entry["files"], "src/main.c")
    assert not selected(entry["files"], "ops/vector_add/notes.txt")


def readme_pre_commit_config() -> str:
    """The README's `.pre-commit-config.yaml`, as a user copies it (its indentation removed)."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- pre-commit-config -->\n( *)```yaml\n(.*?)\n *```", readme, re.S)
    assert block, "the README has no marked pre-commit-config block"
    indent = len(block[1])
    return "".join(line[indent:] + "\n" for line in block[2].splitlines())


def test_the_readmes_pre_commit_config_runs_as_written(tmp_path):
    """Real pre-commit, the README's config verbatim, section-lint installed beside this
    Python (as `pip install libsection` puts it): the op's finding is reported, the file
    outside `ops/` and the plain C file are not linted."""
    import os
    import sys
    from pathlib import Path

    project = tmp_path / "project"
    (project / "ops").mkdir(parents=True)
    (project / "ops/bad.c").write_text(BAD_SECTION)
    (project / "ops/main.c").write_text(PLAIN)
    (project / "elsewhere.c").write_text(BAD_SECTION)
    (project / ".pre-commit-config.yaml").write_text(readme_pre_commit_config())
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    env = {
        **os.environ,
        "PATH": f"{Path(SECTION_LINT).parent}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PRE_COMMIT_COLOR": "never",
    }
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--verbose"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # the hook ran and found SL501
    assert "ops/bad.c:2:1" in output and "[SL501]" in output, output
    assert "elsewhere.c" not in output and "main.c" not in output, output
