"""The README's "Write your first op" walkthrough, executed as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
STEP = re.compile(r"<!-- walkthrough: (?P<what>\S+) -->\n```\w+\n(?P<body>.*?)```", re.DOTALL)


def test_walkthrough_runs_as_written(tmp_path, cache_dir):
    steps = list(STEP.finditer(README.read_text()))
    assert len(steps) >= 5, "the walkthrough lost its steps"
    outputs = []
    for step in steps:
        what, body = step["what"], step["body"]
        if what == "sh":
            run = subprocess.run(body, shell=True, cwd=tmp_path, capture_output=True, text=True)
        elif what == "python":
            run = subprocess.run(
                [sys.executable, "-c", body], cwd=tmp_path, capture_output=True, text=True
            )
        else:  # a file to write
            (tmp_path / what).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / what).write_text(body)
            continue
        assert run.returncode == 0, (
            f"step `{body.strip()[:60]}` failed:\n{run.stdout}\n{run.stderr}"
        )
        outputs.append(run.stdout)
    assert "[1. 2. 3.]" in outputs[1]
    assert outputs[2] == "VectorAdd adds two vectors, not float64[:,:] and float64[:,:]\n"
    assert [line.split()[0] for line in outputs[3].splitlines()] == ["CVM", "FAST_COMPILE", "NUMBA"]
    assert all(line.endswith("[1. 2. 3.]") for line in outputs[3].splitlines())
    assert outputs[4].splitlines() == ["(3,)", "[2. 4. 6.]"]  # 2 (x + y)
    assert outputs[5].splitlines() == [
        "[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]",
        "['DimShuffle', 'BatchedOp']",
    ]


USAGE = """\
import numpy as np
from libsection.pytensor import pytensor_op
from myop.vector_add import VectorAdd

add = VectorAdd()
z: np.ndarray = add(np.arange(3.0), np.ones(3))
types: list[str] = add.output_types("float64[:]", "float64[:]")
op = pytensor_op(add)
"""


def test_the_readme_op_passes_mypy_strict(tmp_path):
    pytest.importorskip("mypy")
    body = next(
        s["body"] for s in STEP.finditer(README.read_text()) if s["what"] == "myop/vector_add.py"
    )
    (tmp_path / "myop").mkdir()
    (tmp_path / "myop" / "__init__.py").write_text("")
    (tmp_path / "myop" / "vector_add.py").write_text(body)
    (tmp_path / "use.py").write_text(USAGE)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            "myop/vector_add.py",
            "use.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
