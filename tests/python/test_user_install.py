"""`pip install .` as the README tells a user to run it: in a fresh clone, into a fresh venv, with
build isolation and no `-C` option, in an environment ./dev left nothing in (user_install.py).
The build compiles the project's defaults (a unity build: a file-local name two joined sources
both define fails it), and the installed package builds and calls an example op from a folder
outside the checkout.

On the stack's own Python, and once per run on each version of SMOKE_TESTED (Python 3.13:
NumPy only, no PyTensor stack runs there), which pyproject.toml lists on the strength of this
test; under ./dev test a version that is not installed fails the run (an unexpected skip).
The install's time is printed (`-s` shows it); it is measured, not asserted."""

from __future__ import annotations

import time

import pytest
from user_install import (
    ROOT,
    SMOKE_TESTED,
    base_python,
    check_an_op_builds_and_runs,
    fresh_clone,
    fresh_venv,
    run,
)

import libsection

pytestmark = pytest.mark.skipif(
    not (ROOT / ".git").exists(), reason="not a git checkout: a clone holds what git tracks"
)


def install_and_call(python: str, tmp_path) -> str:
    source = fresh_clone(tmp_path / "libsection")
    venv_python = fresh_venv(python, tmp_path / "venv")
    start = time.monotonic()
    run([venv_python, "-m", "pip", "install", "-q", "."], cwd=source)
    print(f"\ncold `pip install .` ({python}): {time.monotonic() - start:.0f} s")
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    return check_an_op_builds_and_runs(venv_python, user_dir)


def test_pip_install_of_a_fresh_clone_builds_with_the_defaults_and_runs_an_op(tmp_path):
    python = base_python()
    assert python is not None
    version = install_and_call(python, tmp_path)
    assert version == libsection.__version__


@pytest.mark.once_per_run
@pytest.mark.parametrize("version", SMOKE_TESTED)
def test_pip_install_on_a_python_no_stack_runs_builds_and_runs_an_op(version, tmp_path):
    python = base_python(tuple(map(int, version.split("."))))
    if python is None:
        pytest.skip(
            f"python{version} is not installed (on PATH, under pyenv's versions or /usr/bin)"
        )
    install_and_call(python, tmp_path)
