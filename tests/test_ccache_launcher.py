"""The build compiles through ccache when ccache is on PATH and a test compile through it succeeds,
and without it when that compile fails. ccache fails every compile when it cannot write its cache
folder (a read-only home in a sandboxed build), and that must not break `pip install .`.

Stand-ins for ccache on PATH make both cases, whether or not the machine has ccache: one runs
the compiler it is given, the other fails as ccache does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKING = '#!/bin/sh\nexec "$@"\n'
BROKEN = (
    "#!/bin/sh\n"
    'echo "ccache: error: Failed to create directory /home/u/.cache/ccache/tmp:'
    ' Read-only file system" >&2\n'
    "exit 1\n"
)
OBJECT = "libsection/CMakeFiles/section.dir/src/base/text.cpp.o"

pytestmark = [
    pytest.mark.skipif(not shutil.which(tool), reason=f"{tool} is not installed")
    for tool in ("cmake", "ninja")
]


@pytest.mark.parametrize("works", [True, False], ids=["working", "broken"])
def test_ccache_is_the_launcher_only_when_a_compile_through_it_succeeds(tmp_path, works):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ccache"
    fake.write_text(WORKING if works else BROKEN)
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for name in ("CCACHE_BASEDIR", "CMAKE_CXX_COMPILER_LAUNCHER"):
        env.pop(name, None)  # a user's own settings win; here none is set
    build = tmp_path / "build"
    configure = subprocess.run(
        [
            "cmake",
            "-S",
            ROOT,
            "-B",
            build,
            "-G",
            "Ninja",
            "-DLIBSECTION_BUILD_PYTHON=OFF",
            "-DLIBSECTION_BUILD_TOOLS=OFF",
            "-DLIBSECTION_UNITY_BUILD=OFF",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert configure.returncode == 0, configure.stderr
    rules = (build / "build.ninja").read_text()
    assert (str(fake) in rules) == works
    if works:
        assert f"Compiling through {fake}" in configure.stdout
    else:
        assert f"Not using {fake}: it failed on a test compile" in configure.stdout
        assert "Read-only file system" in configure.stdout  # ccache's own reason, kept
    # Either way a library source compiles.
    compile_ = subprocess.run(
        ["cmake", "--build", build, "--target", OBJECT], env=env, capture_output=True, text=True
    )
    assert compile_.returncode == 0, compile_.stdout + compile_.stderr
    assert (build / OBJECT).is_file()
