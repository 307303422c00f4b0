"""`section-lint --watch`: lints, then lints again on every change, printing only the files whose
findings changed, and says why it stopped on Ctrl-C."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time

import pytest
from test_section_lint import SECTION_LINT

pytestmark = pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")

CLEAN = "#section support_code\n/* nothing yet */\n"
UNKNOWN_TAG = "#section nonsense\nint x;\n"


def save(path, text: str) -> None:
    """Writes as an editor saves, all at once: a poll never sees the file half written."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


class Watcher:
    """A running `section-lint --watch`, its output read line by line as it comes."""

    def __init__(self, *args: str, cwd) -> None:
        self.process = subprocess.Popen(
            [SECTION_LINT, "--watch", *args],
            cwd=cwd,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: dict[str, queue.Queue[str]] = {"out": queue.Queue(), "err": queue.Queue()}
        self.pumps = [
            threading.Thread(target=self._pump, args=(stream, self.lines[name]), daemon=True)
            for name, stream in (("out", self.process.stdout), ("err", self.process.stderr))
        ]
        for pump in self.pumps:
            pump.start()

    @staticmethod
    def _pump(stream, into) -> None:
        for line in stream:
            into.put(line)

    def read_until(self, stream: str, needle: str, timeout: float = 20) -> list[str]:
        """The lines of `stream` up to and including the first one containing `needle`."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines[stream].get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {needle!r} on std{stream} within {timeout} s; got {seen}")
            seen.append(line)
            if needle in line:
                return seen

    def take(self, stream: str, count: int, timeout: float = 20) -> list[str]:
        """The next `count` lines of `stream` (stdout and stderr are read by two threads, so a
        status line on stderr may arrive before the findings printed ahead of it)."""
        return [self.lines[stream].get(timeout=timeout) for _ in range(count)]

    def rest(self, stream: str) -> list[str]:
        """What is left of `stream`, once the process has ended and its pipes are read."""
        out = []
        while not self.lines[stream].empty():
            out.append(self.lines[stream].get())
        return out

    def stop(self, sig=signal.SIGINT) -> int:
        self.process.send_signal(sig)
        code = self.process.wait(timeout=20)
        self.close()
        return code

    def close(self) -> None:
        """After the process has ended: the rest of its output read, the pipes closed."""
        for pump in self.pumps:
            pump.join(timeout=20)
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture
def watcher_factory():
    started: list[Watcher] = []

    def start(*args, cwd):
        started.append(Watcher(*args, cwd=cwd))
        return started[-1]

    yield start
    for w in started:
        if w.process.poll() is None:
            w.process.kill()
            w.process.wait()
        if not w.process.stdout.closed:
            w.close()


def test_watch_relints_changed_files_and_prints_only_what_changed(tmp_path, watcher_factory):
    op = tmp_path / "op"
    op.mkdir()
    save(op / "a.c", UNKNOWN_TAG)
    save(op / "b.c", CLEAN)
    w = watcher_factory("--output-format", "concise", "op", cwd=tmp_path)
    first = w.read_until("err", "watching for changes")
    assert "Found 1 diagnostic;" in first[-1]
    (line,) = w.take("out", 1)
    assert line.startswith("op/a.c:1:") and "SL201" in line, line

    # b.c gets a finding: only b.c's line is printed, a.c's unchanged finding is not repeated.
    save(op / "b.c", UNKNOWN_TAG + "\n")
    status = w.read_until("err", "watching for changes")
    assert any("op/b.c changed" in line for line in status), status
    assert "Found 2 diagnostics;" in status[-1]
    (line,) = w.take("out", 1)  # a repeated a.c line would come first, or at the very end
    assert line.startswith("op/b.c:1:") and "SL201" in line, line

    # A settings file appearing above the files counts as a change; both files become clean.
    save(tmp_path / "section-lint.toml", 'ignore = ["SL201"]\n')
    status = w.read_until("err", "watching for changes")
    assert "section-lint.toml changed" in "".join(status)
    assert "Found 0 diagnostics;" in status[-1]
    assert sorted(w.take("out", 2)) == ["op/a.c: no findings\n", "op/b.c: no findings\n"]

    # A new file in a watched folder is linted too.
    save(op / "c.c", "int main(void) { return 0; }\n")
    w.read_until("err", "watching for changes")
    (line,) = w.take("out", 1)
    assert line.startswith("op/c.c:") and "SL203" in line, line

    assert w.stop() == 0
    tail = "".join(w.read_until("err", "stopped watching"))
    assert "section-lint: stopped watching (Ctrl-C); the last run found 1 diagnostic" in tail
    assert w.rest("out") == []  # nothing printed twice


def test_watch_survives_a_broken_settings_file_and_stops_on_sigterm(tmp_path, watcher_factory):
    (tmp_path / "a.c").write_text(CLEAN)
    w = watcher_factory("a.c", cwd=tmp_path)
    assert "Found 0 diagnostics;" in w.read_until("err", "watching for changes")[-1]
    save(tmp_path / "section-lint.toml", "select = [\n")
    broken = w.read_until("err", "watching on")[-1]
    assert "section-lint.toml:" in broken, broken
    save(tmp_path / "section-lint.toml", 'select = ["SL2"]\n')
    assert "Found 0 diagnostics;" in w.read_until("err", "watching for changes")[-1]
    assert w.stop(signal.SIGTERM) == 0
    assert any("stopped watching (SIGTERM)" in line for line in w.read_until("err", "stopped"))


@pytest.mark.parametrize(
    "option", [["--fix"], ["--diff"], ["--statistics"], ["--output-format", "json"], ["-"]]
)
def test_watch_refuses_what_it_cannot_print(tmp_path, option):
    (tmp_path / "a.c").write_text(CLEAN)
    run = subprocess.run(
        [SECTION_LINT, "--watch", *option, "a.c"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=20,
    )
    assert run.returncode == 2
    assert "--watch prints findings as text" in run.stderr


def test_watch_sees_a_rewrite_that_keeps_the_size_and_time(tmp_path, watcher_factory):
    """A file is known by what it holds: rewritten in place with the same size, its
    modification time set back (a coarse clock, a tool that keeps times), it is linted again."""
    path = tmp_path / "a.c"
    path.write_text(CLEAN)
    before = path.stat()
    w = watcher_factory("--output-format", "concise", "a.c", cwd=tmp_path)
    assert "Found 0 diagnostics;" in w.read_until("err", "watching for changes")[-1]
    same_size = CLEAN.replace("support_code", "nonsense____")  # an unknown tag, SL201
    assert len(same_size) == len(CLEAN)
    with path.open("r+") as f:  # in place: the same inode
        f.write(same_size)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    status = w.read_until("err", "watching for changes")
    assert "Found 1 diagnostic;" in status[-1], status
    assert w.stop() == 0
