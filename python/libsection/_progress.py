"""A transient progress line for long builds: ``[3/8] compiling vector_times_vector (1.2 s)``.

It is shown only on a terminal (or in a Jupyter kernel), only once a task has run for
``DELAY`` seconds, and erased when the tasks are done, so it never adds to what the
``libsection`` logger records (one record per compile). It stays silent when the
``libsection`` logger is set above INFO, when ``LIBSECTION_PROGRESS=0``, or when the caller
passes ``progress=False``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

__all__ = ["Progress", "progress_stream"]

DELAY = 1.0  # seconds a task runs before the line appears: quick builds show nothing
TICK = 0.2  # seconds between updates of the elapsed time


def _in_jupyter() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return get is not None and type(get()).__name__ == "ZMQInteractiveShell"


# Progress objects open now, shown or silent: a build inside one (``python -m libsection run``
# numbers its ops, or was asked to be quiet) adds no line of its own.
_open = 0
_open_lock = threading.Lock()


def progress_stream(progress: bool | None = None) -> TextIO | _NotebookLine | None:
    """Where the progress line goes: stderr when ``progress`` is True, or when it is None and
    stderr is a terminal or a notebook's, nobody asked for quiet and no other Progress is open;
    else None."""
    if progress is False or sys.stderr is None:
        return None
    if progress is None:
        if _open or os.environ.get("LIBSECTION_PROGRESS") == "0":
            return None
        # Quiet: the libsection logger itself set above INFO, or logging disabled up to INFO
        # (the root's default WARNING says nothing: it is where every program starts).
        if (
            logging.getLogger("libsection").level > logging.INFO
            or logging.root.manager.disable >= logging.INFO
        ):
            return None
        if not (_in_jupyter() or sys.stderr.isatty()):
            return None
    if _in_jupyter():
        return _NotebookLine()
    return sys.stderr


class Progress:
    """One line for ``total`` numbered tasks that may run concurrently; it names the task that
    has run longest. A no-op without a stream."""

    def __init__(self, total: int, stream: TextIO | _NotebookLine | None) -> None:
        self.total = total
        self.stream = stream
        self._running: dict[int, tuple[str, float]] = {}  # number -> (label, start)
        self._lock = threading.Lock()
        self._text = ""  # the line on screen
        self._width = 0  # its length, to erase it
        self._closed = False

    def __enter__(self) -> Progress:
        global _open
        with _open_lock:
            _open += 1
        if self.stream is not None:
            _ticker.watch(self)
        return self

    def __exit__(self, *exc: object) -> None:
        global _open
        if self.stream is not None:
            _ticker.forget(self)
            with self._lock:
                self._closed = True  # a tick already under way draws nothing now
                self._show("")
        with _open_lock:
            _open -= 1

    @contextlib.contextmanager
    def task(self, number: int, label: str) -> Iterator[None]:
        """Task ``number`` (1-based) runs inside the block."""
        with self._lock:
            self._running[number] = (label, time.monotonic())
        try:
            yield
        finally:
            with self._lock:
                del self._running[number]
                if not self._running:
                    self._show("")

    def tick(self) -> None:
        """Shows the longest-running task once it has run for ``DELAY`` seconds."""
        with self._lock:
            if self._closed or not self._running:
                return
            number, (label, start) = min(self._running.items(), key=lambda item: item[1][1])
            elapsed = time.monotonic() - start
            if elapsed >= DELAY:
                count = f"[{number}/{self.total}] " if self.total > 1 else ""
                self._show(f"{count}{label} ({elapsed:.1f} s)")

    def _show(self, text: str) -> None:
        """Replaces the line on screen (blanks, not an escape code: notebooks show those)."""
        if self.stream is None or text == self._text:
            return
        if isinstance(self.stream, _NotebookLine):
            self.stream.show(text)
        else:
            self.stream.write("\r" + text.ljust(self._width) + ("\r" if not text else ""))
            self.stream.flush()
        self._width = len(text)
        self._text = text


class _NotebookLine:
    """The progress line in a Jupyter cell: one display, made when there is first something to
    show and updated in place (a kernel turns every write to stderr into an output of its own,
    and a saved notebook keeps them all); emptied when done, so the cell keeps at most one,
    empty, output for it."""

    def __init__(self) -> None:
        self._handle = None

    def show(self, text: str) -> None:
        from IPython.display import Pretty, display

        if self._handle is None:
            if not text:
                return
            self._handle = display(Pretty(text), display_id=True)
        else:
            self._handle.update(Pretty(text))


class _Ticker:
    """The one thread that updates every open, shown Progress: started with the first one and
    asleep while none is open, so a build (cached ones too) costs no thread of its own."""

    def __init__(self) -> None:
        self._shown: set[Progress] = set()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, progress: Progress) -> None:
        with self._changed:
            self._shown.add(progress)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="libsection-progress", daemon=True
                )
                self._thread.start()
            self._changed.notify()

    def forget(self, progress: Progress) -> None:
        with self._changed:
            self._shown.discard(progress)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._shown)
                shown = list(self._shown)
            for progress in shown:
                progress.tick()
            time.sleep(TICK)


_ticker = _Ticker()
