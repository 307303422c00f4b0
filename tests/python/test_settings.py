"""Every LIBSECTION_* variable is read and checked in one place, before anything touches the
disk: a bad value is an error naming the variable, and the cache directory is not created."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VTV = ROOT / "ops" / "vector_times_vector" / "vectorTimesVector.c"

BUILD = f"""
import libsection
libsection.build([{str(VTV)!r}], "APPLY_SPECIFIC(vector_times_vector)",
                 inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
"""

BAD = [
    ("LIBSECTION_DEBUG", "2"),
    ("LIBSECTION_LINKER", "evil"),
    ("LIBSECTION_PCH", "maybe"),
    ("LIBSECTION_PROGRESS", "yes"),
    ("LIBSECTION_SHOW_GENERATED", "all"),
    ("LIBSECTION_LOCK_TIMEOUT", "soon"),
    ("LIBSECTION_CACHE_MAX_BYTES", "big"),
    ("LIBSECTION_MAX_FILE_BYTES", "-1"),
    ("LIBSECTION_DERIVATIVE_MODE", "sideways"),
    ("LIBSECTION_TAPE_MAX_BYTES", "lots"),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_bad_value_is_refused_naming_it_before_the_cache_is_made(tmp_path, name, value):
    cache = tmp_path / "cache"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LIBSECTION_CACHE_DIR": str(cache)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    run = subprocess.run(
        [sys.executable, "-c", BUILD], env={**env, name: value}, capture_output=True, text=True
    )
    assert run.returncode != 0
    assert re.search(rf"{name}( is )?\W+{re.escape(value)}", run.stderr), run.stderr
    assert not cache.exists(), f"{name}={value} was refused only after {cache} was created"


def test_the_readme_lists_every_variable():
    readme = (ROOT / "README.md").read_text()
    source = (ROOT / "libsection" / "src" / "base" / "settings.cpp").read_text()
    names = re.findall(r'SettingVariable\{"(LIBSECTION_[A-Z_]+)"', source)
    assert len(names) >= 10
    table = readme[readme.index("| Variable |") :]
    for name in names:
        assert f"`{name}`" in table, f"{name} is not in the README's table of variables"
