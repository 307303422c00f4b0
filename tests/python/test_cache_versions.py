"""Two libsection versions sharing one cache directory (two venvs, one user's default cache):
each builds and loads its own entries, and neither loads the other's, since libsection's version
is part of every key. The two versions are one copy of the installed package, at one path (so
nothing but the version tells their modules apart), whose core says either this version or
another: its version string patched in `_core`'s bytes (same length), as two releases' builds
of one op would differ."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from linker_ops import VTV, VTV_FUNC

import libsection

THIS = libsection.__version__
# As long as THIS, and differing only in its first character: the linker may store a shorter
# string (the "0" of "0.1.0") as the version's tail, which must not change with it.
OTHER = ("8" if THIS[0] == "9" else "9") + THIS[1:]

SCRIPT = textwrap.dedent(
    f"""
    import json, sys
    import numpy as np
    import libsection
    f = libsection.build({str(VTV)!r}, {VTV_FUNC!r}, inputs=["float64[:]", "float64[:]"],
                         outputs=["float64[:]"])
    x = np.arange(4.0)
    print(json.dumps({{"version": libsection.__version__, "package": libsection.__file__,
                      "key": f.info["key"], "compiled": f.info["compiled"],
                      "correct": f(x, x).tolist() == (x * x).tolist()}}))
    """
)


class Versions:
    """A copy of the installed package under `site`, whose core says THIS or OTHER."""

    def __init__(self, site: Path):
        package = site / "libsection"
        shutil.copytree(Path(libsection.__file__).parent, package)
        (self.core,) = package.glob("_core*.so")
        self.bytes = {THIS: self.core.read_bytes()}
        # The version is a string of its own and the tail of the messages that name it.
        self.bytes[OTHER] = (
            self.bytes[THIS]
            .replace(f"\0{THIS}\0".encode(), f"\0{OTHER}\0".encode())
            .replace(f"libsection {THIS}".encode(), f"libsection {OTHER}".encode())
        )
        assert self.bytes[OTHER] != self.bytes[THIS], f"no version string {THIS!r} in the core"

    def use(self, version: str) -> None:
        fresh = self.core.with_suffix(".new")
        fresh.write_bytes(self.bytes[version])
        fresh.replace(self.core)


def run(env: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_two_versions_share_a_cache_and_keep_to_their_own_entries(tmp_path, cache_dir):
    if THIS == OTHER:
        pytest.fail(f"cannot make another version string from {THIS!r}")
    site = tmp_path / "site"
    versions = Versions(site)
    env = {**os.environ, "LIBSECTION_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(site)}

    first = {}
    for version in (THIS, OTHER):
        versions.use(version)
        first[version] = run(env)
        assert first[version]["version"] == version
        assert first[version]["package"].startswith(str(site)), first[version]["package"]
        assert first[version]["correct"]
    # The other version found this one's entry and did not take it: it compiled its own.
    assert first[THIS]["compiled"] and first[OTHER]["compiled"], first
    assert first[THIS]["key"] != first[OTHER]["key"]
    # Each finds its own again, in the one cache, without compiling.
    for version in (THIS, OTHER):
        versions.use(version)
        again = run(env)
        assert (again["key"], again["compiled"], again["correct"]) == (
            first[version]["key"],
            False,
            True,
        )
    written = {
        json.loads(m.read_text())["libsection_version"]
        for m in cache_dir.glob("entries/*/manifest.json")
    }
    assert written == {THIS, OTHER}
