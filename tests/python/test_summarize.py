"""tests/summarize.py: the closing line of ./dev test over both stacks, which CI judges."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "summarize", Path(__file__).resolve().parents[1] / "summarize.py"
)
summarize = importlib.util.module_from_spec(spec)
spec.loader.exec_module(summarize)

# The plain closing line CI reads: 'N passed, N failed' (', N skipped'), a word and colon before.
CI_LINE = re.compile(r"^(\w+: )?\d+ passed, \d+ failed(, \d+ skipped)?$")


def run(tmp_path, capsys, **stacks):
    """main() over logs given as {stack: (pytest output, exit code)}: (exit, printed lines)."""
    argv = []
    for stack, (log, code) in stacks.items():
        if log is not None:
            (tmp_path / f"test-{stack}.log").write_text(log)
        argv += [stack, str(code)]
    code = summarize.main(argv, tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert CI_LINE.match(lines[-1]), lines[-1]
    return code, lines


def test_both_stacks_passing_add_up(tmp_path, capsys):
    skips(
        tmp_path,
        "py311",
        ("tests/python/test_pymc.py", "could not import 'pymc': No module named 'pymc'"),
        ("tests/python/test_jax_ffi.py", "could not import 'jax': No module named 'jax'"),
    )
    code, lines = run(
        tmp_path,
        capsys,
        py311=("....\n642 passed, 2 skipped in 122.28s (0:02:02)\n", 0),
        py312=("....\n640 passed, 3 xfailed, 1 xpassed in 225.65s (0:03:45)\n", 0),
    )
    assert code == 0
    assert lines[-1] == "total: 1283 passed, 0 failed, 5 skipped"
    assert lines[0] == "[dev] py311: 642 passed, 2 skipped in 122.28s (0:02:02) (pytest exit 0)"


def test_a_failing_stack_fails_the_total(tmp_path, capsys):
    code, lines = run(
        tmp_path,
        capsys,
        py311=("10 passed in 1.00s\n", 0),
        py312=("FAILED x\n=== 2 failed, 8 passed, 1 error in 3.50s ===\n", 1),
    )
    assert code == 1
    assert lines[-1] == "total: 18 passed, 3 failed, 0 skipped"


@pytest.mark.parametrize(
    ("log", "exit_code"),
    [
        ("1 skipped, 643 deselected in 2.66s\n", 5),  # ran nothing
        ("Traceback (most recent call last):\n", 3),  # crashed before its summary
        (None, 2),  # no log at all
    ],
    ids=["no-tests", "crash", "no-log"],
)
def test_a_stack_without_counted_failures_that_exits_nonzero_counts_as_one_failure(
    tmp_path, capsys, log, exit_code
):
    code, lines = run(tmp_path, capsys, py311=("10 passed in 1.00s\n", 0), py312=(log, exit_code))
    assert code == 1
    assert lines[-1].startswith("total: 10 passed, 1 failed")


def skips(tmp_path, stack, *records):
    """Writes the skip record conftest.py leaves for a stack: (test, reason) pairs."""
    (tmp_path / f"test-{stack}-skips.json").write_text(
        json.dumps([{"test": t, "reason": r} for t, r in records])
    )


def test_every_skip_is_listed_with_its_reason_and_why_it_is_expected(tmp_path, capsys):
    skips(
        tmp_path,
        "py311",
        ("tests/python/test_jax_ffi.py", "could not import 'jax': No module named 'jax'"),
        ("tests/python/test_pymc.py", "could not import 'pymc': No module named 'pymc'"),
        ("tests/python/test_notebook.py", "nbformat is installed on the py312 stack"),
    )
    skips(
        tmp_path,
        "py312",
        ("tests/test_guardrails.py::test_library_passes_clang_tidy",
         "clang-tidy runs on the py311 build only"),
    )  # fmt: skip
    code, lines = run(
        tmp_path,
        capsys,
        py311=("3 skipped, 10 passed in 1.00s\n", 0),
        py312=("1 skipped, 10 passed in 1.00s\n", 0),
    )
    assert code == 0, lines
    assert lines[-1] == "total: 20 passed, 0 failed, 4 skipped"
    listed = [line for line in lines if " skipped " in line and line.startswith("[dev]")]
    assert len(listed) == 4, lines
    assert any(
        "test_jax_ffi.py: could not import 'jax'" in line
        and "(expected: jax is pinned on py312 only" in line
        for line in listed
    ), listed
    assert any("nbformat is installed" in line and "expected" in line for line in listed)
    assert any("clang-tidy" in line and "expected: clang-tidy checks" in line for line in listed)


@pytest.mark.parametrize(
    ("stack", "reason"),
    [
        ("py312", "could not import 'jax': No module named 'jax'"),  # py312 pins JAX
        ("py311", "section-lint is not built"),
        ("py311", "clang-tidy runs on the py311 build only"),  # expected on py312 only
        (
            "py311",
            "once per run: ran on the py311 stack",
        ),  # a once-per-run test skipped on its first stack
        ("py312", "gdb not installed"),
    ],
)
def test_an_unexpected_skip_fails_the_run_and_counts_as_a_failure(tmp_path, capsys, stack, reason):
    skips(tmp_path, stack, ("tests/python/test_x.py::test_y", reason))
    code, lines = run(tmp_path, capsys, **{stack: ("1 skipped, 5 passed in 1.00s\n", 0)})
    assert code == 1
    assert lines[-1] == "total: 5 passed, 1 failed, 0 skipped"
    assert any(f"test_y: {reason} (UNEXPECTED" in line for line in lines), lines


def test_skips_without_their_record_fail_the_run(tmp_path, capsys):
    code, lines = run(tmp_path, capsys, py311=("2 skipped, 5 passed in 1.00s\n", 0))
    assert code == 1
    assert lines[-1] == "total: 5 passed, 1 failed, 1 skipped"
    assert any("no record of the skips" in line for line in lines), lines
