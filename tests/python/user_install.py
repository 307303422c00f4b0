"""What the user-path install tests share (test_user_install.py, test_wheel.py): this tree as a
fresh clone holds it, an environment that ./dev left nothing in, fresh venvs, and an example op
built and called in them from a folder outside the checkout.

The builds run as a user's do: `pip install .` or `pip wheel` with build isolation (pip fetches
scikit-build-core, pybind11 and NumPy from PyPI) and no `-C` option, so they compile the
project's own defaults (pyproject.toml, CMakeLists.txt), never ./dev's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Python versions no stack runs (deps/stack-*.txt) that test_user_install.py installs on and
# runs an op with, numpy only; pyproject.toml lists them beside the stacks' versions.
SMOKE_TESTED = ("3.13",)
OP = ROOT / "ops" / "vector_times_vector"
TOOLS = ("section-lint", "section-expand", "section-cache")
# A cold build takes minutes on a loaded machine: this is a hang guard, not a target.
BUILD_TIMEOUT = 1800

# What a user's shell has that a build may read: who and where they are, their locale and how
# they reach the network (a proxy, and the certificates that trust it: PIP_CERT is the one pip
# setting kept, since a fresh venv's pip knows only its own bundle). Everything else is
# dropped: CMAKE_*, SKBUILD_*, other PIP_*, CC, CXX, CFLAGS, LIBSECTION_*, VIRTUAL_ENV,
# PYTHON*, CCACHE_* ...
KEPT_VARIABLES = (
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
)


def user_environment(**extra: str) -> dict[str, str]:
    """The environment of a user's shell on this machine: the kept variables, and PATH without
    anything of this checkout (./dev puts the stack's venv first) or of the running venv. pip
    reads no configuration file (its defaults: PyPI); its download cache stays, and ccache's,
    which change nothing of what compiles."""
    env = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
    ours = (ROOT.resolve(), Path(sys.prefix).resolve())
    path = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and not any(Path(entry).resolve().is_relative_to(p) for p in ours)
    ]
    env["PATH"] = os.pathsep.join(path or ["/usr/local/bin", "/usr/bin", "/bin"])
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def run(argv, **kwargs) -> subprocess.CompletedProcess:
    """Runs argv, scrubbed environment unless `env` is given; fails the test when it fails."""
    kwargs.setdefault("env", user_environment())
    kwargs.setdefault("timeout", BUILD_TIMEOUT)
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{argv}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def fresh_clone(into: Path) -> Path:
    """The files git tracks in this checkout, as they are in its work tree, copied to `into`:
    what a clone of it holds, with no build tree, venv or cache of ./dev's."""
    listed = run(["git", "-C", ROOT, "ls-files", "-z"], env=None).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree, not yet committed
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return into


def base_python(version: tuple[int, int] | None = None) -> str | None:
    """The interpreter of a Python version (default: the one running), not a venv's: on PATH,
    under pyenv's versions (whose shims fail for a version not selected), or Debian's. None
    when this machine has none that can make a venv."""
    if version is None or version == sys.version_info[:2]:
        found = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        return str(found) if found.is_file() else sys.executable
    name = f"python{version[0]}.{version[1]}"
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [shutil.which(name)]
    candidates += sorted(pyenv.glob(f"{version[0]}.{version[1]}.*/bin/{name}"), reverse=True)
    candidates += [f"/usr/bin/{name}", f"/usr/local/bin/{name}"]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [str(candidate), "-c", "import sys, venv, ensurepip; print(sys.executable)"],
            capture_output=True,
            text=True,
            env=user_environment(),
        )
        if probe.returncode == 0:
            return probe.stdout.strip()
    return None


def fresh_venv(python: str, path: Path) -> Path:
    """A new venv at `path` (pip only) made by `python`: its own interpreter."""
    run([python, "-m", "venv", path], timeout=300)
    return path / "bin" / "python"


# Builds the example op the README starts from and calls it, then checks where libsection
# came from: the venv, never this checkout.
CALL_AN_OP = textwrap.dedent(
    """
    import sys
    import numpy as np
    import libsection
    from vector_times_vector.op import VectorTimesVector

    assert libsection.__file__.startswith(sys.prefix), (libsection.__file__, sys.prefix)
    z = VectorTimesVector()(np.arange(3.0), np.full(3, 2.0))
    print(libsection.__version__, z.tolist())
    """
)


def check_an_op_builds_and_runs(python: Path, user_dir: Path) -> str:
    """In `user_dir` (outside the checkout), with a private compile cache: the example op is
    built and called, and the tools answer. Returns the version the package reports."""
    shutil.copytree(OP, user_dir / OP.name)
    env = user_environment(LIBSECTION_CACHE_DIR=str(user_dir / "cache"))
    out = run([python, "-c", CALL_AN_OP], cwd=user_dir, env=env, timeout=600).stdout
    version, result = out.split(None, 1)
    assert result == "[0.0, 2.0, 4.0]\n", out
    for name in TOOLS:
        shown = run([python.parent / name, "--version"], cwd=user_dir, env=env).stdout
        assert shown.strip() == f"{name} {version}", shown
    return version


def tool(name: str) -> str:
    """A program deps/requirements.txt installs beside this Python."""
    path = Path(sys.executable).parent / name
    if not path.is_file():
        pytest.fail(
            f"{name} not found beside {sys.executable}: deps/install.sh installs it "
            "(deps/requirements.txt)"
        )
    return str(path)
