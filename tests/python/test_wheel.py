"""The wheel as a user gets it: `python -m build --sdist` of a fresh clone, then `pip wheel` of
that sdist in a fresh venv (build isolation, no `-C` option, an environment ./dev left nothing
in: user_install.py), so it is built with the project's own defaults. Installed as a user
installs it (`pip install` of the wheel, NumPy from PyPI), it builds and calls an example op
from a folder outside the checkout.

The same wheel is repaired by `auditwheel repair` (which grafts the one library outside the
manylinux policy, libcrypto, into the wheel), installed into a fresh venv with nothing but
NumPy beside it, and works there (the package, the three tools, one op build) with the
build-only packages hidden: Boost, CLI11, nlohmann-json and libssl-dev's headers and the
system's libcrypto are covered by empty mounts (`unshare -m`) while it runs. The build's time
is printed (`-s` shows it); it is measured, not asserted.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
from user_install import ROOT, TOOLS, check_an_op_builds_and_runs, tool
from user_install import run as run_as_user

# The libraries the manylinux policy lets a wheel take from the system: the C and C++ runtimes.
MANYLINUX_LIBRARIES = re.compile(
    r"^(libstdc\+\+\.so\.6|libgcc_s\.so\.1|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|"
    r"librt\.so\.1|ld-linux[-\w.]*\.so\.\d|linux-vdso\.so\.1)$"
)
# What only building libsection needs (deps/apt-packages.txt), hidden while the wheel runs.
BUILD_ONLY_DIRS = [
    "/usr/include/boost",
    "/usr/include/CLI",
    "/usr/include/nlohmann",
    "/usr/include/toml++",
    "/usr/include/openssl",
]
BUILD_ONLY_FILES = ["/usr/lib/*/libcrypto.so*", "/usr/lib/*/libssl.so*"]

pytestmark = pytest.mark.skipif(
    not (ROOT / ".git").exists(), reason="not a git checkout: a clone holds what git tracks"
)


def run(argv, **kwargs):
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result


def needed_libraries(binary: Path) -> list[str]:
    dynamic = run(["readelf", "-d", binary]).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)


def test_the_sdist_holds_the_sources_and_no_build_tree(user_wheel):
    sdist, _, _ = user_wheel
    with tarfile.open(sdist) as packed:
        names = {name.split("/", 1)[1] for name in packed.getnames() if "/" in name}
    for needed in ("pyproject.toml", "CMakeLists.txt", "python/src/compiled_op.cpp", "LICENSE"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("build/", ".git/"))], sorted(names)[:20]


def test_the_wheel_of_the_sdist_installs_and_builds_and_runs_an_op(user_wheel, tmp_path):
    _, wheel, python = user_wheel
    run_as_user([python, "-m", "pip", "install", "-q", wheel], cwd=tmp_path)
    check_an_op_builds_and_runs(python, tmp_path)


@pytest.fixture(scope="module")
def wheel_venv(wheels, tmp_path_factory):
    """A fresh venv with the repaired wheel and the pinned NumPy installed, nothing else."""
    _, repaired = wheels
    venv = tmp_path_factory.mktemp("venv") / "venv"
    run([sys.executable, "-m", "venv", venv], timeout=300)
    python = venv / "bin" / "python"
    run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            repaired.parent,
            "libsection",
        ],
        timeout=300,
    )
    return venv


def site_packages(venv: Path) -> Path:
    (found,) = venv.glob("lib/python*/site-packages")
    return found


def test_auditwheel_shows_a_manylinux_policy_for_the_repaired_wheel(wheels):
    built, repaired = wheels
    assert re.search(
        r"-manylinux_2_\d+_x86_64\.whl$|-manylinux_2_\d+_aarch64\.whl$", repaired.name
    ), repaired.name
    shown = run([tool("auditwheel"), "show", repaired]).stdout
    policy = re.search(r'consistent\s+with\s+the\s+following\s+platform\s+tag:\s+"([^"]+)"', shown)
    assert policy and policy.group(1).startswith("manylinux_"), shown
    # The unrepaired wheel needs libcrypto from the system, which no manylinux policy allows.
    plain = run([tool("auditwheel"), "show", built]).stdout
    assert "libcrypto" in plain, plain


# Files the package reads at run time, which the wheel must ship: the editor shim `python -m
# libsection editor-setup` points clangd at, and the JAX XLA FFI handler's source, built on the
# first JAX call (without it, JAX would fall back to a Python callback per call).
RUN_TIME_FILES = ["libsection/include/libsection_editor.h", "libsection/_jax_ffi_handler.cpp"]


def test_the_wheel_holds_the_package_and_the_tools(wheels, wheel_venv):
    bin_dir = wheel_venv / "bin"
    for name in TOOLS:
        assert (bin_dir / name).is_file(), name
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as packed:
            names = set(packed.namelist())
        for name in RUN_TIME_FILES:
            assert name in names, f"{wheel.name} lacks {name}"
    for name in RUN_TIME_FILES:
        assert (site_packages(wheel_venv) / name).is_file(), name
    handler = (site_packages(wheel_venv) / RUN_TIME_FILES[1]).read_text()
    assert handler == (ROOT / "python" / RUN_TIME_FILES[1]).read_text()
    listed = run([bin_dir / "python", "-m", "pip", "list", "--format=freeze"]).stdout
    names = sorted(line.split("==")[0].lower() for line in listed.split())
    assert names == ["libsection", "numpy", "pip"] or names == [
        "libsection",
        "numpy",
        "pip",
        "setuptools",
    ], names


def binaries(venv: Path) -> list[Path]:
    """The core and the tools' executables (the repaired wheel keeps them in libsection.scripts)."""
    site = site_packages(venv)
    found = list(site.glob("libsection/_*.so")) + list(site.glob("libsection.scripts/*"))
    assert len(found) == 2 + len(TOOLS), found  # _core, _runtime and the tools
    return found


def test_core_and_tools_need_only_the_manylinux_runtimes_and_the_wheels_own_libraries(wheel_venv):
    grafted = site_packages(wheel_venv) / "libsection.libs"
    for binary in binaries(wheel_venv):
        needed = needed_libraries(binary)
        assert needed, f"{binary}: readelf found no NEEDED entries"
        extra = [
            lib
            for lib in needed
            if not MANYLINUX_LIBRARIES.match(lib) and not (grafted / lib).is_file()
        ]
        assert not extra, f"{binary.name} needs {extra} beyond the manylinux policy"
        # and ldd finds each one in the wheel or under a name the policy allows
        for line in run(["ldd", binary]).stdout.splitlines():
            name, _, where = line.strip().partition(" => ")
            name, where = Path(name.split(" (")[0]).name, where.split(" (")[0]
            assert "not found" not in where, f"{binary.name}: {line}"
            inside = bool(where) and Path(where).resolve().parent == grafted.resolve()
            assert MANYLINUX_LIBRARIES.match(name) or inside, f"{binary.name}: {line}"


def hiding_build_only_packages() -> list[str]:
    """A command prefix that runs its command with the build-only packages covered by empty
    mounts (a private mount namespace), or [] when this machine does not allow one."""
    files = sorted(f for pattern in BUILD_ONLY_FILES for f in glob.glob(pattern))
    dirs = [d for d in BUILD_ONLY_DIRS if os.path.isdir(d)]
    script = "".join(f"mount -t tmpfs none {d} && " for d in dirs)
    script += "".join(f"mount --bind /dev/null {f} && " for f in files)
    prefix = ["unshare", "-m", "sh", "-c", script + 'exec "$@"', "hide"]
    if (
        shutil.which("unshare") is None
        or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0
    ):
        return []
    return prefix


def test_the_installed_wheel_imports_builds_an_op_and_runs_the_tools(wheel_venv, tmp_path):
    hide = hiding_build_only_packages()
    if not hide:
        pytest.skip(
            "no private mount namespace here (unshare -m needs root or user namespaces);"
            " test_core_and_tools_need_only_... still checks the libraries"
        )
    bin_dir = wheel_venv / "bin"
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "PYTHONPATH",
            "VIRTUAL_ENV",
            "CPATH",
            "C_INCLUDE_PATH",
            "CPLUS_INCLUDE_PATH",
            "LIBRARY_PATH",
            "LD_LIBRARY_PATH",
            "PKG_CONFIG_PATH",
        )
    }
    env.update(
        LIBSECTION_CACHE_DIR=str(tmp_path / "cache"),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    )
    op = ROOT / "ops/vector_times_vector/vectorTimesVector.c"
    script = textwrap.dedent(f"""
        import glob, os
        import numpy as np, libsection
        hidden = [p for p in {BUILD_ONLY_DIRS!r} if os.listdir(p)] + [
            f for pattern in {BUILD_ONLY_FILES!r} for f in glob.glob(pattern) if os.path.getsize(f)]
        assert not hidden, hidden
        assert libsection.__file__.startswith({str(wheel_venv)!r}), libsection.__file__
        f = libsection.build({str(op)!r}, "APPLY_SPECIFIC(vector_times_vector)",
                             inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
        print(libsection.__version__, f(np.arange(3.0), np.full(3, 2.0)).tolist())
    """)
    out = run([*hide, bin_dir / "python", "-c", script], env=env, cwd=tmp_path, timeout=300).stdout
    version = importlib.metadata.version("libsection")
    assert out.split(None, 1) == [version, "[0.0, 2.0, 4.0]\n"], out
    for name in TOOLS:
        shown = run([*hide, bin_dir / name, "--version"], env=env).stdout
        assert shown.strip() == f"{name} {version}", shown
    lint = run([*hide, bin_dir / "section-lint", op.parent], env=env)
    assert "All checks passed!" in lint.stdout
