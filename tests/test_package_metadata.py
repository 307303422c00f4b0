"""pyproject.toml's metadata: no deprecation warning from scikit-build-core, the fields a package
index shows, the hook's and editable installs' overrides, and extras whose ranges hold the
versions both tested stacks pin (deps/stack-py311.txt, deps/stack-py312.txt)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from scikit_build_core.settings.skbuild_read_settings import SettingsReader

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def read_settings(state: str = "wheel", **env: str):
    out = io.StringIO()
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            reader = SettingsReader.from_file(ROOT / "pyproject.toml", state=state)
            reader.validate_may_exit()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return reader.settings, out.getvalue()


def pins(stack: str) -> dict[str, str]:
    text = (ROOT / f"deps/stack-{stack}.txt").read_text()
    return {m[0].lower(): m[1] for m in re.findall(r"^([\w.-]+)==([\w.]+)", text, re.M)}


def test_scikit_build_reads_the_settings_without_a_warning():
    _, output = read_settings()
    assert "deprecated" not in output and "WARNING" not in output, output


def test_the_index_shows_urls_classifiers_authors_and_keywords():
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(PROJECT["urls"])
    assert PROJECT["license"] == "MIT" and PROJECT["authors"] and PROJECT["keywords"]
    assert "Operating System :: POSIX :: Linux" in PROJECT["classifiers"]
    assert (ROOT / "CHANGELOG.md").read_text().count(f"## [{version()}]") == 1


def version() -> str:
    cmake = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(libsection VERSION ([0-9.]+)", cmake)[1]


def test_each_extra_holds_the_versions_the_stacks_pin():
    stacks = {stack: pins(stack) for stack in ("py311", "py312")}
    assert set(PROJECT["optional-dependencies"]) >= {"pytensor", "jax", "pymc", "notebook"}
    checked = 0
    for extra, requirements in PROJECT["optional-dependencies"].items():
        for text in requirements:
            requirement = Requirement(text)
            for stack, pinned in stacks.items():
                if requirement.name.lower() in pinned:
                    assert requirement.specifier.contains(pinned[requirement.name.lower()]), (
                        f"[{extra}] {text} excludes {stack}'s {pinned[requirement.name.lower()]}"
                    )
                    checked += 1
    assert checked >= 8


def test_the_hook_venv_builds_section_lint_alone_and_editables_rebuild():
    hook, _ = read_settings(VIRTUAL_ENV="/home/u/.cache/pre-commit/repoab12/py_env-python3.12")
    assert hook.cmake.define["LIBSECTION_TOOLS"] == "section-lint"
    assert hook.cmake.define["LIBSECTION_BUILD_PYTHON"] == "OFF" and hook.wheel.packages == []
    user, _ = read_settings(VIRTUAL_ENV="/home/u/project/.venv")
    assert "LIBSECTION_TOOLS" not in user.cmake.define and user.wheel.packages
    editable, _ = read_settings(state="editable")
    assert editable.editable.rebuild is True and editable.build_dir
