"""The wheel as a user gets it: built from this tree, installed into a fresh venv with nothing but
NumPy beside it, and working there (the package, the three tools, one op build), with no shared
library needed beyond the C and C++ runtimes.

It reuses the stack's build tree (build/wheel-pyXY, as ./dev test leaves it) with the same
options, so it only packs what is built already; without that tree it is skipped.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = ROOT / f"build/wheel-py{sys.version_info[0]}{sys.version_info[1]}"
# The manylinux policy's C/C++ runtime (libcrypto: allowed should the core ever hash with it).
ALLOWED_NEEDED = re.compile(
    r"^(libstdc\+\+\.so\.6|libgcc_s\.so\.1|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|"
    r"librt\.so\.1|ld-linux[-\w.]*\.so\.\d|libcrypto\.so[.\d]*)$"
)

pytestmark = pytest.mark.skipif(
    not (BUILD_DIR / "CMakeCache.txt").is_file(),
    reason=f"no build tree at {BUILD_DIR} (./dev test makes it)",
)


def run(argv, **kwargs):
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result


def cache_option(name: str) -> str:
    """An option as the build tree has it, so the wheel build reconfigures nothing."""
    text = (BUILD_DIR / "CMakeCache.txt").read_text()
    found = re.search(rf"^{name}:\w+=(.*)$", text, re.M)
    return found.group(1) if found else "OFF"


def needed_libraries(binary: Path) -> list[str]:
    dynamic = run(["readelf", "-d", binary]).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    """A fresh venv with the wheel of this tree and the pinned NumPy installed, nothing else."""
    work = tmp_path_factory.mktemp("wheel")
    wheels = work / "wheels"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            ROOT,
            "--no-deps",
            "--no-build-isolation",
            "-w",
            wheels,
            f"-Cbuild-dir={BUILD_DIR}",
            "-Ccmake.define.LIBSECTION_BUILD_TESTS=" + cache_option("LIBSECTION_BUILD_TESTS"),
        ],
        timeout=600,
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
            wheels,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if fetched.returncode != 0:
        pytest.skip(
            f"numpy=={numpy} wheel not available to pip (offline?): {fetched.stderr[-300:]}"
        )
    venv = work / "venv"
    run([sys.executable, "-m", "venv", venv], timeout=300)
    python = venv / "bin" / "python"
    run(
        [python, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels, "libsection"],
        timeout=300,
    )
    return venv


def test_the_wheel_holds_the_package_and_the_tools(wheel_venv):
    bin_dir = wheel_venv / "bin"
    for tool in ("section-lint", "section-expand", "section-cache"):
        assert (bin_dir / tool).is_file(), tool
    listed = run([bin_dir / "python", "-m", "pip", "list", "--format=freeze"]).stdout
    names = sorted(line.split("==")[0].lower() for line in listed.split())
    assert names == ["libsection", "numpy", "pip"] or names == [
        "libsection",
        "numpy",
        "pip",
        "setuptools",
    ], names


def test_the_installed_wheel_imports_builds_an_op_and_runs_the_tools(wheel_venv, tmp_path):
    bin_dir = wheel_venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        LIBSECTION_CACHE_DIR=str(tmp_path / "cache"),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    )
    op = ROOT / "ops/vector_times_vector/vectorTimesVector.c"
    script = textwrap.dedent(f"""
        import numpy as np, libsection
        assert libsection.__file__.startswith({str(wheel_venv)!r}), libsection.__file__
        f = libsection.build({str(op)!r}, "APPLY_SPECIFIC(vector_times_vector)",
                             inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
        print(libsection.__version__, f(np.arange(3.0), np.full(3, 2.0)).tolist())
    """)
    out = run([bin_dir / "python", "-c", script], env=env, cwd=tmp_path, timeout=300).stdout
    version = importlib.metadata.version("libsection")
    assert out.split(None, 1) == [version, "[0.0, 2.0, 4.0]\n"], out
    for tool in ("section-lint", "section-expand", "section-cache"):
        shown = run([bin_dir / tool, "--version"], env=env).stdout
        assert shown.strip() == f"{tool} {version}", shown
    lint = run([bin_dir / "section-lint", op.parent], env=env)
    assert "Found 0 diagnostics" in lint.stdout


def test_core_and_tools_need_only_the_c_and_cxx_runtimes(wheel_venv):
    cores = list(wheel_venv.glob("lib/python*/site-packages/libsection/_core*.so"))
    assert len(cores) == 1, cores
    binaries = [cores[0]] + [
        wheel_venv / "bin" / t for t in ("section-lint", "section-expand", "section-cache")
    ]
    for binary in binaries:
        needed = needed_libraries(binary)
        assert needed, f"{binary}: readelf found no NEEDED entries"
        extra = [lib for lib in needed if not ALLOWED_NEEDED.match(lib)]
        assert not extra, f"{binary.name} needs {extra} beyond the C/C++ runtime"
    if shutil.which("ldd"):  # and each of them resolves on this machine
        resolved = run(["ldd", cores[0]]).stdout
        assert "not found" not in resolved, resolved
