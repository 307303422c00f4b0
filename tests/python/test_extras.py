"""Each extra of pyproject.toml (`libsection[pytensor]`, `[jax]`, `[pymc]`, `[notebook]`) installed
from the built wheel into a fresh venv, with the versions this stack pins (deps/ as constraints, so
pip takes them from its cache), and the README's code blocks that need it run there as written:
the walkthrough (files, `sh` and `python` steps; a step importing pytensor needs `[pytensor]`)
and the blocks marked `<!-- needs: EXTRA -->`. A block must print what its comments say
(`print(x)  # [1. 2. 3.]`), and the `[jax]` block must run its op through the XLA FFI call
(the HLO XLA compiled, dumped, calls `libsection_node` and no Python callback): a wheel whose
handler does not build would still print the right numbers, through the fallback. A block
needing an extra that was not installed must fail in the `libsection`-only venv, which shows
the marks are not decoration.

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
from test_wheel import run

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


def printed_as_said(out: str, body: str) -> list[str]:
    """The comments of the block's `print(...)  # what` lines that its output lacks (in order)."""
    said = re.findall(r"^\s*print\(.*\)\s*#\s*(.+?)\s*$", body, re.M)
    lines = iter(line.strip() for line in out.splitlines())
    return [want for want in said if not any(line == want for line in lines)]


def ffi_path_problems(dump: Path, stderr: str) -> list[str]:
    """What shows the `[jax]` block's op did not run through the XLA FFI call: the custom calls
    of every module XLA compiled (dumped as HLO text) and libsection's fallback warning."""
    targets = {
        target
        for text in (f.read_text(errors="replace") for f in dump.glob("*.txt"))
        for target in re.findall(r'custom_call_target="([^"]+)"', text)
    }
    problems = [] if "libsection_node" in targets else [f"no FFI call among {sorted(targets)}"]
    problems += [f"a Python callback: {t}" for t in sorted(targets) if "callback" in t]
    problems += [line for line in stderr.splitlines() if "jax.pure_callback" in line]
    return problems


def run_blocks(python: Path, workdir: Path, installed: set[str]) -> list[str]:
    """Runs every block whose needs are installed, checking what it prints; returns the
    failures of the others."""
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
        dump = workdir / f"xla-{len(list(workdir.glob('xla-*')))}"
        result = subprocess.run(
            [str(a) for a in argv],
            cwd=workdir,
            env={**env, "XLA_FLAGS": f"--xla_dump_to={dump}"} if needs == "jax" else env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if needs in installed:
            shown = f"[{needs}] {body[:200]}\n{result.stdout}\n{result.stderr}"
            assert result.returncode == 0, shown
            assert not printed_as_said(result.stdout, body), (
                printed_as_said(result.stdout, body),
                shown,
            )
            if needs == "jax":
                assert not ffi_path_problems(dump, result.stderr), (
                    ffi_path_problems(dump, result.stderr),
                    shown,
                )
        elif needs != "libsection":
            refused.append(needs) if result.returncode != 0 else None
    return refused


@pytest.mark.parametrize("extra", ON_THIS_STACK)
def test_the_extra_installs_and_runs_the_readme_blocks_that_need_it(extra, wheels, tmp_path):
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


def test_blocks_marked_with_an_extra_fail_without_it(wheels, tmp_path):
    _, repaired = wheels
    python = fresh_venv(tmp_path / "venv", "libsection", repaired.parent)
    work = tmp_path / "work"
    work.mkdir()
    refused = run_blocks(python, work, {"libsection"})
    assert {"pytensor", "jax", "pymc", "notebook"} <= set(refused), refused
