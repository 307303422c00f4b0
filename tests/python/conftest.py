"""Fixtures the Python tests share across modules."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from user_install import base_python, fresh_clone, fresh_venv, tool
from user_install import run as run_as_user


@pytest.fixture(scope="session")
def section_lint() -> str:
    """The section-lint of the Python that runs the tests (its venv's bin, on PATH or not)."""
    found = shutil.which("section-lint", path=str(Path(sys.executable).parent))
    return found or shutil.which("section-lint") or pytest.fail("section-lint is not installed")


def run(argv, **kwargs):
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result


# Once per run: the cold build of a user's wheel is minutes, and test_wheel.py and
# test_extras.py check the same wheel.
@pytest.fixture(scope="session")
def user_wheel(tmp_path_factory):
    """The sdist of a fresh clone, the wheel `pip wheel` builds from it in a fresh venv, and
    that venv's Python."""
    work = tmp_path_factory.mktemp("user-wheel")
    source = fresh_clone(work / "libsection")
    run_as_user([sys.executable, "-m", "build", "--sdist", "-o", work / "dist", source], cwd=work)
    (sdist,) = (work / "dist").glob("libsection-*.tar.gz")
    python = fresh_venv(base_python(), work / "venv")
    start = time.monotonic()
    run_as_user(
        [python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", work / "built", sdist], cwd=work
    )
    print(f"\ncold `pip wheel` of the sdist: {time.monotonic() - start:.0f} s")
    (wheel,) = (work / "built").glob("libsection-*.whl")
    return sdist, wheel, python


@pytest.fixture(scope="session")
def wheels(user_wheel, tmp_path_factory):
    """The user's wheel, its repaired form, and the pinned NumPy's wheel beside them."""
    work = tmp_path_factory.mktemp("wheel")
    repaired = work / "repaired"
    _, wheel, _ = user_wheel
    run(
        [tool("auditwheel"), "repair", wheel, "-w", repaired],
        timeout=300,
        env=dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"),
    )
    numpy = importlib.metadata.version("numpy")
    fetched = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"numpy=={numpy}",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            repaired,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if fetched.returncode != 0:
        pytest.skip(
            f"numpy=={numpy} wheel not available to pip (offline?): {fetched.stderr[-300:]}"
        )
    (fixed,) = repaired.glob("libsection-*.whl")
    return wheel, fixed
