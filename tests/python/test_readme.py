"""The README's "Write your first op" walkthrough, executed as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
            run = subprocess.run([sys.executable, "-c", body], cwd=tmp_path, capture_output=True, text=True)
        else:  # a file to write
            (tmp_path / what).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / what).write_text(body)
            continue
        assert run.returncode == 0, f"step `{body.strip()[:60]}` failed:\n{run.stdout}\n{run.stderr}"
        outputs.append(run.stdout)
    assert "[1. 2. 3.]" in outputs[1]
    assert [line.split()[0] for line in outputs[2].splitlines()] == ["CVM", "FAST_COMPILE", "NUMBA"]
    assert all(line.endswith("[1. 2. 3.]") for line in outputs[2].splitlines())
    assert outputs[3].splitlines() == ["(3,)", "[2. 4. 6.]"]  # 2 (x + y)
