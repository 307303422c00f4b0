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
USER_INSTALL = ROOT / "tests" / "python" / "user_install.py"


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


def extra_closure(extra: str) -> set[str]:
    """The distributions `libsection[extra]` installs directly, through the extras it names."""
    names: set[str] = set()
    for text in PROJECT["optional-dependencies"][extra]:
        requirement = Requirement(text)
        if requirement.name == "libsection":
            for inner in requirement.extras:
                names |= extra_closure(inner)
        else:
            names.add(requirement.name.lower())
    return names


def test_the_pymc_extra_brings_what_the_readmes_samplers_need():
    """`pip install "libsection[pymc]"` then the README's PyMC block: every sampler it names
    (`nuts_sampler=`) is installed, JAX with the JAX ones."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- needs: pymc -->\n```python\n(.*?)```", readme, re.S)
    assert block, "the README has no block marked `needs: pymc`"
    needs = {"nutpie": {"nutpie"}, "numpyro": {"jax", "numpyro"}, "blackjax": {"jax", "blackjax"}}
    named = {s for s in needs if re.search(rf'"{s}"', block[1])}
    assert "nuts_sampler" in block[1] and {"numpyro", "blackjax"} <= named, block[1]
    installed = extra_closure("pymc")
    for sampler in named:
        assert needs[sampler] <= installed, f"[pymc] lacks {needs[sampler] - installed}"


def test_the_python_versions_listed_are_the_tested_ones():
    from packaging.specifiers import SpecifierSet

    stacks = {
        f"3.{p.stem.removeprefix('stack-py3')}" for p in (ROOT / "deps").glob("stack-py3*.txt")
    }
    assert stacks == {"3.11", "3.12"}
    # and the versions the user-path install test runs an op on without a stack
    smoke = re.search(r"^SMOKE_TESTED = \((.*)\)$", USER_INSTALL.read_text(), re.M)
    assert smoke, f"{USER_INSTALL} names no SMOKE_TESTED"
    tested = stacks | set(re.findall(r'"(3\.\d+)"', smoke[1]))
    assert tested == {"3.11", "3.12", "3.13"}
    listed = {
        c.rsplit(" :: ", 1)[1]
        for c in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    assert listed == tested
    allowed = SpecifierSet(PROJECT["requires-python"])
    for minor in range(8, 16):
        version = f"3.{minor}"
        assert (f"{version}.0" in allowed) == (version in tested), (version, str(allowed))
    wheels = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]
    assert set(wheels["build"].split()) == {f"cp3{v.split('.')[1]}-*" for v in tested}
