"""Each extra of pyproject.toml (`libsection[pytensor]`, `[jax]`, `[pymc]`, `[notebook]`) installed
from the built wheel into a fresh venv, with the versions this stack pins (deps/ as constraints, so
pip takes them from its cache), and the README's code blocks that need it run there as written:
the walkthrough (files, `sh` and `python` steps; a step importing pytensor needs `[pytensor]`)
and the blocks marked `<!-- needs: EXTRA -->`. A block needing an extra that was not installed
must fail in the `libsection`-only venv, which shows the marks are not decoration.

JAX and PyMC are in the py312 stack only, so their extras are checked there.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from test_wheel import BUILD_DIR, run, wheels  # noqa: F401  (wheels: the fixture)

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
STACK = f"py{sys.version_info[0]}{sys.version_info[1]}"
BLOCK = re.compile(
    r"<!-- (?P<kind>walkthrough|needs): (?P<what>\S+) -->\n```(?P<lang>\w+)\n(?P<body>.*?)```", re.S
)
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
# What each extra needs from this stack (its modules are importable here).
ON_THIS_STACK = [
    e
    for e, module in (
        ("pytensor", "pytensor"),
        ("jax", "jax"),
        ("pymc", "pymc"),
        ("notebook", "ipykernel"),
    )
    if importlib.util.find_spec(module) is not None or e == "notebook"
]

pytestmark = pytest.mark.skipif(
    not (BUILD_DIR / "CMakeCache.txt").is_file(),
    reason=f"no build tree at {BUILD_DIR} (./dev test makes it)",
)


def blocks():
    """(needs, kind, what, lang, body) of the README's marked blocks, in order."""
    for m in BLOCK.finditer(README):
        needs = m["what"] if m["kind"] == "needs" else "libsection"
        if m["kind"] == "walkthrough" and re.search(r"^import pytensor", m["body"], re.M):
            needs = "pytensor"
        yield needs, m["kind"], m["what"], m["lang"], m["body"]


def fresh_venv(path: Path, requirement: str, wheel_dir: Path) -> Path:
    run([sys.executable, "-m", "venv", path], timeout=300)
    python = path / "bin/python"
    constraints = ["-c", ROOT / "deps/requirements.txt", "-c", ROOT / f"deps/stack-{STACK}.txt"]
    run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--find-links",
            wheel_dir,
            requirement,
            *constraints,
        ],
        timeout=900,
    )
    return python


def run_blocks(python: Path, workdir: Path, installed: set[str]) -> list[str]:
    """Runs every block whose needs are installed; returns the failures of the others."""
    env = {
        **os.environ,
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(python.parent.parent),
    }
    env.pop("PYTHONPATH", None)
    refused = []
    # The walkthrough's files first: the blocks checking an extra use its op.
    for _, kind, what, _, body in blocks():
        if kind == "walkthrough" and what not in ("sh", "python"):
            (workdir / what).parent.mkdir(parents=True, exist_ok=True)
            (workdir / what).write_text(body)
    for needs, kind, what, lang, body in blocks():
        if kind == "walkthrough" and what not in ("sh", "python"):
            continue
        argv = ["bash", "-c", body] if lang == "sh" else [python, "-c", body]
        if lang == "sh" and body.lstrip().startswith("pip install"):
            continue  # installing is the fixture's job
        result = subprocess.run(
            [str(a) for a in argv],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if needs in installed:
            assert result.returncode == 0, (
                f"[{needs}] {body[:200]}\n{result.stdout}\n{result.stderr}"
            )
        elif needs != "libsection":
            refused.append(needs) if result.returncode != 0 else None
    return refused


@pytest.mark.parametrize("extra", ON_THIS_STACK)
def test_the_extra_installs_and_runs_the_readme_blocks_that_need_it(extra, wheels, tmp_path):  # noqa: F811
    _, repaired = wheels
    python = fresh_venv(tmp_path / "venv", f"libsection[{extra}]", repaired.parent)
    # The extra's own requirements and the ones it includes (`libsection[pytensor]`).
    installed = {"libsection", extra}
    while True:  # `[pymc]` names `[jax]`, which names `[pytensor]`
        named = {
            inner
            for e in installed - {"libsection"}
            for requirement in EXTRAS[e]
            for inner in re.findall(r"libsection\[(\w+)\]", requirement)
        }
        if named <= installed:
            break
        installed |= named
    work = tmp_path / "work"
    work.mkdir()
    run_blocks(python, work, installed)
    assert any(needs == extra for needs, *_ in blocks()), f"no README block needs [{extra}]"


def test_blocks_marked_with_an_extra_fail_without_it(wheels, tmp_path):  # noqa: F811
    _, repaired = wheels
    python = fresh_venv(tmp_path / "venv", "libsection", repaired.parent)
    work = tmp_path / "work"
    work.mkdir()
    refused = run_blocks(python, work, {"libsection"})
    assert {"pytensor", "jax", "pymc", "notebook"} <= set(refused), refused
