"""Tracebacks that end at the user's code: an error about the user's op (a compile error, a
section error, or one their own code raised) leaves libsection through an entry point without
libsection's own frames, as JAX hides its internals. The user's call and the error's message
(``op.c:5:12: error: ...``) are then what a notebook or a plain traceback shows.

An error libsection's own code raised that is none of its errors (a bug) keeps every frame:
that is what a report of it needs.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import ParamSpec, TypeVar

__all__ = ["about_the_users_op", "cut_library_frames", "entry_point"]

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep

P = ParamSpec("P")
R = TypeVar("R")


def _ours(entry: TracebackType) -> bool:
    return entry.tb_frame.f_code.co_filename.startswith(_PACKAGE)


# The package's own errors about the user's op, besides the linker core's: each module above
# names its own (`about_the_users_op`), so this one imports none of them.
_OWN_ERRORS: list[type[BaseException]] = []

E = TypeVar("E", bound=type[BaseException])


def about_the_users_op(error_class: E) -> E:
    """Marks an error class of the package's as one about the user's op (a class decorator):
    it leaves an entry point without the library's frames."""
    _OWN_ERRORS.append(error_class)
    return error_class


def _about_the_users_op(error: BaseException, innermost: TracebackType | None) -> bool:
    """libsection's own errors, and whatever the user's code raised (an op's output_types)."""
    from . import _core

    own: tuple[type[BaseException], ...] = (_core.CompileError, _core.LinkError, *_OWN_ERRORS)
    return isinstance(error, own) or (innermost is not None and not _ours(innermost))


def cut_library_frames(error: BaseException) -> None:
    """Drops libsection's frames from ``error``'s traceback when it is about the user's op.

    The caller re-raises it with a bare ``raise``, which adds no frame of its own; the frames
    of the user's code, and of code between (PyTensor's), stay.
    """
    entries = []
    entry = error.__traceback__
    while entry is not None:
        entries.append(entry)
        entry = entry.tb_next
    if not _about_the_users_op(error, entries[-1] if entries else None):
        return
    kept: TracebackType | None = None
    for entry in reversed(entries):
        if not _ours(entry):
            kept = TracebackType(kept, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    error.__traceback__ = kept


def entry_point(function: Callable[P, R]) -> Callable[P, R]:
    """Marks a function the user calls: an error about the user's op leaves it without
    libsection's frames (``cut_library_frames``)."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except Exception as error:
            cut_library_frames(error)
            raise

    return call
