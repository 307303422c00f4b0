"""python/libsection/_core.pyi describes the real compiled module: regenerated from it, it is
unchanged. After changing a binding, regenerate it with
`pybind11-stubgen libsection._core -o python` (from the repository root)."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import libsection

COMMITTED = Path(__file__).resolve().parents[2] / "python/libsection/_core.pyi"


def test_core_stub_matches_the_compiled_module(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pybind11_stubgen", "libsection._core", "-o", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    generated = (tmp_path / "libsection/_core.pyi").read_text()
    committed = COMMITTED.read_text()
    diff = "".join(
        difflib.unified_diff(
            committed.splitlines(True),
            generated.splitlines(True),
            "committed _core.pyi",
            "from the module",
        )
    )
    assert not diff, f"the stub is out of date:\n{diff}"


def test_package_is_marked_typed():
    assert (Path(libsection.__file__).parent / "py.typed").is_file()
    assert (Path(libsection.__file__).parent / "_core.pyi").is_file()
