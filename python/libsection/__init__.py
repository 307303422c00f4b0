"""libsection: write PyTensor-family C ops as ``#section`` files.

The C++ core parses section files, expands them for one application of an op, builds, caches
and loads the compiled module. This package exposes it to Python.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from . import _core
from ._core import Diagnostic, LoadedSections, __version__

__all__ = [
    "CompileError",
    "CompiledOp",
    "Diagnostic",
    "ExternalCOp",
    "LinkError",
    "LoadedSections",
    "Module",
    "SectionError",
    "__version__",
    "build",
    "load",
    "load_sections",
    "parse_text",
    "tensor",
    "type_of",
    "upcast",
]


class SectionError(ValueError):
    """A section file the reference loaders would refuse.

    ``str(error)`` starts with the reference's own message (``Unknown section type (in file
    x.c): tag``, ...), so code matching those messages keeps working; the rendered diagnostics
    with file, line, column and a caret follow. ``.diagnostics`` holds them as objects.
    """

    def __init__(self, message: str, diagnostics: Iterable[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.diagnostics = list(diagnostics)


PathLike = str | os.PathLike[str]


def _raise_for(loaded: LoadedSections) -> None:
    if loaded.error is None:
        return
    os_errno, message, path = loaded.error
    if os_errno:
        raise OSError(os_errno, os.strerror(os_errno), path)
    shown = [d for d in loaded.diagnostics if d.severity != "info"]
    details = "".join(d.render() for d in shown)
    raise SectionError(f"{message}\n{details}" if details else message, shown)


def _file_path(f: PathLike | bytes) -> tuple[bytes, str]:
    """The path's bytes as the OS takes them, and its name for messages (printable UTF-8).

    File names need not be UTF-8: ``os.fsencode`` undoes ``surrogateescape``, and bytes paths
    are taken as they are. A NUL byte is refused by the core, as ``open()`` refuses it.
    """
    path = Path(os.fsdecode(f))
    shown = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return os.fsencode(path), shown


def load(files: PathLike | list[PathLike]) -> LoadedSections:
    """Reads and merges section files like the reference ``load_c_code``; raises on bad files.

    A single path or a list of paths (str, bytes or path-like); relative paths are relative to
    the working directory. Messages name each file as ``str(Path(f))``, the path as written, as
    PyTensor does.
    """
    paths = [_file_path(f) for f in (files if isinstance(files, list) else [files])]
    loaded = _core.load_sections([raw for raw, _ in paths], [shown for _, shown in paths])
    _raise_for(loaded)
    return loaded


def load_sections(files: PathLike | list[PathLike]) -> dict[str, str]:
    """The merged ``{tag: text}`` dict, exactly as the reference's ``code_sections``."""
    return load(files).sections


def parse_text(text: str, filename: str = "<string>") -> LoadedSections:
    """Parses text held in memory. Never raises for content: see ``.error`` and ``.diagnostics``."""
    return _core.parse_text(text, filename)


# After SectionError: these modules raise it.
from ._build import CompiledOp, CompileError, LinkError, Module, build  # noqa: E402
from .op import ExternalCOp, tensor, type_of, upcast  # noqa: E402
