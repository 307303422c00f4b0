"""The published pre-commit hook (.pre-commit-hooks.yaml), installed by pre-commit itself into a
cold PRE_COMMIT_HOME from a snapshot of this tree (its commit plus uncommitted changes, as
`pre-commit try-repo` takes it): the install builds section-lint only (no Python module, no
other tool; pyproject.toml's override for pre-commit's py_env-* venvs), and the hook then lints
the staged files. The install time is printed (`-s` shows it); it is measured, not asserted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD_SECTION = "#section code\nreturn 1;\n"  # SL501


pytestmark = pytest.mark.once_per_run


def git(*argv, cwd, **kwargs):
    return subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True, **kwargs)


def snapshot(into: Path) -> str:
    """This tree as a commit of a clone, with its uncommitted and untracked files."""
    git("clone", "-q", "--shared", str(ROOT), str(into), cwd=ROOT)
    diff = git("diff", "HEAD", "--binary", cwd=ROOT).stdout
    if diff:
        git("apply", "--whitespace=nowarn", "-", cwd=into, input=diff)
    untracked = git("ls-files", "--others", "--exclude-standard", "-z", cwd=ROOT).stdout.decode()
    for name in filter(None, untracked.split("\0")):
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, into / name)
    git("add", "-A", cwd=into)
    git(
        "-c",
        "user.name=test",
        "-c",
        "user.email=test@localhost",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "snapshot",
        cwd=into,
    )
    return git("rev-parse", "HEAD", cwd=into, text=True).stdout.strip()


def test_the_hook_installs_section_lint_alone_and_runs(tmp_path):
    hook_repo = tmp_path / "libsection"
    rev = snapshot(hook_repo)
    project = tmp_path / "project"
    (project / "ops").mkdir(parents=True)
    (project / "ops/bad.c").write_text(BAD_SECTION)
    (project / "main.c").write_text("int main(void) { return 0; }\n")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: section-lint\n"
    )
    git("init", "-q", cwd=project)
    git("add", ".", cwd=project)
    home = tmp_path / "pre-commit-home"
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    pre_commit = [sys.executable, "-m", "pre_commit"]

    start = time.monotonic()
    subprocess.run(
        [*pre_commit, "install-hooks"], cwd=project, env=env, check=True, capture_output=True
    )
    print(
        f"\npre-commit install-hooks (section-lint, cold PRE_COMMIT_HOME): "
        f"{time.monotonic() - start:.0f} s"
    )
    (env_dir,) = home.glob("repo*/py_env-*")
    scripts = {p.name for p in (env_dir / "bin").iterdir()}
    assert "section-lint" in scripts
    assert not {"section-expand", "section-cache"} & scripts, scripts
    modules = [
        p.name
        for p in env_dir.glob("lib/python*/site-packages/**/*.so")
        if p.name.startswith("_core")
    ]
    assert modules == [], modules  # no Python module was compiled

    result = subprocess.run(
        [*pre_commit, "run", "--files", "ops/bad.c", "main.c", "--verbose"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # the hook found SL501 in ops/bad.c
    assert "ops/bad.c:2:1" in output and "[SL501]" in output, output
    assert "main.c:" not in output.replace("ops/bad.c", ""), output
