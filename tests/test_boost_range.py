"""The oldest Boost libsection supports (1.74, CMakeLists.txt's find_package) builds the library and
its C++ unit tests, and they pass. Debian's libboost1.74-dev is fetched with `apt-get download`
and unpacked with `dpkg -x` into a temporary prefix (no root, nothing installed); the build is
pointed at its BoostConfig.cmake, and the test checks that 1.74's headers are the ones compiled."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OLDEST = "1.74"


pytestmark = pytest.mark.once_per_run


def run(argv, **kwargs):
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{argv}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def test_the_oldest_boost_builds_the_library_and_passes_the_unit_tests(tmp_path):
    assert shutil.which("apt-get") and shutil.which("dpkg"), "needs Debian's apt-get and dpkg"
    run(["apt-get", "download", f"libboost{OLDEST}-dev"], cwd=tmp_path)
    (deb,) = tmp_path.glob(f"libboost{OLDEST}-dev_*.deb")
    prefix = tmp_path / "prefix"
    run(["dpkg", "-x", deb, prefix])
    (config,) = prefix.glob(f"usr/lib/*/cmake/Boost-{OLDEST}.*/BoostConfig.cmake")

    build = tmp_path / "build"
    run(
        [
            "cmake",
            "-S",
            ROOT,
            "-B",
            build,
            "-G",
            "Ninja",
            f"-DBoost_DIR={config.parent}",
            "-DLIBSECTION_BUILD_TESTS=ON",
            "-DLIBSECTION_BUILD_TOOLS=OFF",
            "-DLIBSECTION_BUILD_PYTHON=OFF",
        ]
    )
    cache = (build / "CMakeCache.txt").read_text()
    assert re.search(rf"^Boost_DIR:\w+={re.escape(str(config.parent))}$", cache, re.M), cache
    # The unpacked headers come before the system's (1.81, /usr/include) on every compile line.
    commands = (build / "compile_commands.json").read_text()
    assert f"-isystem {prefix}/usr/include" in commands or f"-I{prefix}/usr/include" in commands
    run(["cmake", "--build", build, "-j", str(min(os.cpu_count() or 2, 2))])
    tests = run([build / "tests/libsection_tests"])
    assert "Status: SUCCESS!" in tests.stdout
