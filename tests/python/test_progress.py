"""The progress line of long builds: `[2/2] compiling square (1.2 s)` on a terminal's stderr,
erased at the end, never a log record, and nothing when quiet or not on a terminal."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import libsection
from libsection import _progress

OPS = Path(__file__).resolve().parents[2] / "ops"
LINE = re.compile(r"\[([12])/2\] compiling (Square|Times)\w* \((\d+\.\d) s\)")


def specs(tag: str) -> list[dict]:
    """Two ops under names of their own: a module this process loaded before is not compiled
    again, and the name is part of the module's text."""
    return [
        dict(
            files=OPS / "square/square.c",
            inputs=["float64[:]"],
            outputs=["float64[:]"],
            name=f"Square{tag}",
        ),
        dict(
            files=OPS / "vector_times_vector/vectorTimesVector.c",
            func_name="APPLY_SPECIFIC(vector_times_vector)",
            inputs=["float64[:]", "float64[:]"],
            outputs=["float64[:]"],
            name=f"Times{tag}",
        ),
    ]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch):
    """A terminal to put on sys.stderr, in the test itself (pytest's capture sets sys.stderr
    again between a fixture's setup and the test)."""
    monkeypatch.delenv("LIBSECTION_PROGRESS", raising=False)
    screen = Terminal()

    def use() -> Terminal:
        monkeypatch.setattr(sys, "stderr", screen)
        return screen

    screen.use = use
    return screen


@pytest.fixture
def fast_ticks(monkeypatch):
    """The line from the first tick, so that builds quicker than a second show it too."""
    monkeypatch.setattr(_progress, "DELAY", 0.0)
    monkeypatch.setattr(_progress, "TICK", 0.01)


def test_build_many_shows_numbered_compiles_on_a_terminal_and_logs_each_once(
    cache_dir, terminal, fast_ticks, caplog
):
    terminal.use()
    with caplog.at_level(logging.INFO, logger="libsection"):
        square, vtv = libsection.build_many(specs("Shown"), jobs=2)
    assert square.info["compiled"] and vtv.info["compiled"]
    shown = terminal.getvalue()
    lines = LINE.findall(shown)
    assert lines, shown
    assert all((number == "1") == (name == "Square") for number, name, _ in lines), lines
    # Erased at the end: the last carriage return is followed only by blanks and one more.
    assert shown.endswith("\r") and shown[:-1].rsplit("\r", 1)[1].strip() == "", repr(shown[-80:])
    compiled = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compiled ")]
    assert len(compiled) == 2, compiled
    assert not any("[1/2]" in r.getMessage() or "[2/2]" in r.getMessage() for r in caplog.records)


def test_a_single_build_shows_its_name_without_a_count(cache_dir, terminal, fast_ticks):
    terminal.use()
    libsection.build(**specs("Single")[0])
    assert re.search(r"compiling SquareSingle \(\d+\.\d s\)", terminal.getvalue()), (
        terminal.getvalue()
    )
    assert "[1/1]" not in terminal.getvalue()


def test_nothing_when_quiet_or_not_a_terminal(cache_dir, terminal, fast_ticks, monkeypatch):
    terminal.use()
    logging.getLogger("libsection").setLevel(logging.WARNING)
    try:
        assert _progress.progress_stream() is None  # the logger silenced: quiet
    finally:
        logging.getLogger("libsection").setLevel(logging.NOTSET)
    assert _progress.progress_stream() is terminal
    assert _progress.progress_stream(False) is None
    monkeypatch.setenv("LIBSECTION_PROGRESS", "0")
    assert _progress.progress_stream() is None
    monkeypatch.delenv("LIBSECTION_PROGRESS")

    piped = io.StringIO()  # isatty() is False
    monkeypatch.setattr(sys, "stderr", piped)
    assert _progress.progress_stream() is None
    assert _progress.progress_stream(True) is piped
    assert all(op.info["compiled"] for op in libsection.build_many(specs("Piped")))
    assert piped.getvalue() == ""


def test_quick_tasks_show_nothing_and_nested_builds_add_no_line(terminal):
    terminal.use()
    with _progress.Progress(3, terminal) as shown:
        assert _progress.progress_stream() is None  # a build inside adds no second line
        with shown.task(1, "compiling quick"):
            time.sleep(0.3)  # under DELAY (1 s)
    assert terminal.getvalue() == ""
    assert _progress.progress_stream() is terminal


def test_one_thread_updates_every_line_so_a_build_starts_none(terminal, fast_ticks):
    terminal.use()
    tickers = set()  # the Thread objects themselves: an ident may be reused after a join
    for _ in range(3):
        with _progress.Progress(1, terminal) as shown, shown.task(1, "compiling quick"):
            time.sleep(0.05)
            tickers.update(t for t in threading.enumerate() if t.name == "libsection-progress")
    assert len(tickers) == 1
    assert "compiling quick" in terminal.getvalue()  # that one thread did draw the line
    assert terminal.getvalue().endswith("\r")  # and each Progress erased it on leaving


RUN_SCRIPT = """
import importlib.util, io, json, sys
from libsection import __main__ as main, _progress

class Terminal(io.StringIO):
    def isatty(self):
        return True

_progress.DELAY, _progress.TICK = 0.0, 0.01
main._run_pytensor = lambda example, task: ("PyTensor: not run", True)
screen, out = Terminal(), io.StringIO()
sys.stderr, sys.stdout = screen, out
main.run(__import__("pathlib").Path(%(ops)r), quiet=%(quiet)r)
sys.stdout = sys.__stdout__
print(json.dumps({"screen": screen.getvalue(), "out": out.getvalue()}))
"""

SUBSET = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("all_examples", %r)
everything = sys.modules["all_examples"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(everything)
EXAMPLES = [e for e in everything.EXAMPLES if e.folder in ("square", "vector_times_vector")]
"""


@pytest.mark.parametrize("quiet", [False, True])
def test_python_m_libsection_run_numbers_its_compiles_unless_quiet(cache_dir, tmp_path, quiet):
    # A new process: this one may have loaded these ops already, and then nothing compiles.
    (tmp_path / "examples.py").write_text(SUBSET % str(OPS / "examples.py"))
    script = RUN_SCRIPT % {"ops": str(tmp_path), "quiet": quiet}
    env = dict(os.environ)
    env.pop("LIBSECTION_PROGRESS", None)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["out"].count("| compiled ") == 2, result["out"]  # one line per op
    if quiet:
        assert result["screen"] == ""
    else:
        shown = result["screen"]
        assert re.search(r"\[1/2\] compiling vector_times_vector \(\d+\.\d s\)", shown), shown
        assert "[2/2] compiling square (" in shown
