"""Loading section files: ``load``, ``load_sections``, ``parse_text`` and ``SectionError``.

The bottom layer of the package: it depends on the compiled core only.
"""

from __future__ import annotations

import errno
import inspect
import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from . import _core
from ._core import Diagnostic, LoadedSections
from ._traceback import about_the_users_op, entry_point

__all__ = [
    "LoadError",
    "SectionDecodeError",
    "SectionError",
    "load",
    "load_sections",
    "load_texts",
    "parse_text",
]

PathLike = str | os.PathLike[str]


class LoadError(NamedTuple):
    r"""``LoadedSections.error``: what the reference loader would raise for these files.

    ``errno`` is nonzero for a file that cannot be read (an ``OSError`` with that number and
    ``path``); else ``message`` is the reference's ``ValueError`` message. Still a tuple:
    ``errno, message, path = loaded.error`` works as before.

    Examples:
        >>> import libsection
        >>> loaded = libsection.parse_text("#section bogus\nint x;\n", "op.c")
        >>> errno, message, path = loaded.error
        >>> message
        'Unknown section type (in file op.c): bogus'
    """

    errno: int
    message: str
    path: str


@about_the_users_op
class SectionError(ValueError):
    r"""A section file the reference loaders would refuse.

    ``str(error)`` starts with the reference's own message (``Unknown section type (in file
    x.c): tag``, ...), so code matching those messages keeps working; the rendered diagnostics
    with file, line, column and a caret follow.

    Attributes:
        diagnostics (list[Diagnostic]): What is wrong, each at its file, line and column.

    Examples:
        >>> import libsection
        >>> from pathlib import Path
        >>> _ = Path("typo.c").write_text("#section suport_code\nint x;\n")
        >>> try:
        ...     libsection.load("typo.c")
        ... except libsection.SectionError as e:
        ...     print(e.diagnostics[0].code, e.diagnostics[0].line)
        SL201 1
    """

    __module__ = "libsection"  # its public name, in tracebacks

    def __init__(self, message: str, diagnostics: Iterable[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.diagnostics = list(diagnostics)


class SectionDecodeError(SectionError, UnicodeDecodeError):
    r"""A section file that is not UTF-8. Also a ``UnicodeDecodeError`` with the fields Python's
    own decoder gives (PyTensor reads files with ``read_text(encoding="utf-8")``, so code that
    catches ``UnicodeDecodeError`` keeps working).

    Examples:
        >>> import libsection
        >>> from pathlib import Path
        >>> _ = Path("latin1.c").write_bytes(b"#section support_code\n// caf\xe9\n")
        >>> try:
        ...     libsection.load("latin1.c")
        ... except UnicodeDecodeError as e:
        ...     print(type(e).__name__, e.start)
        SectionDecodeError 28
    """

    __module__ = "libsection"

    def __init__(
        self, message: str, diagnostics: Iterable[Diagnostic], cause: UnicodeDecodeError
    ) -> None:
        UnicodeDecodeError.__init__(
            self, cause.encoding, cause.object, cause.start, cause.end, cause.reason
        )
        self.message = message
        self.diagnostics = list(diagnostics)

    def __str__(self) -> str:
        return self.message


def _decode_error(path: str | bytes) -> UnicodeDecodeError | None:
    try:
        with open(path, "rb") as f:
            f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return e if isinstance(e, UnicodeDecodeError) else None
    return None


def raise_for(loaded: LoadedSections, paths: list[str] | list[bytes] | None = None) -> None:
    """Raises what the reference loader raises for these files, with libsection's details."""
    if loaded.error is None:
        return
    os_errno, message, path = loaded.error
    if os_errno:
        raise OSError(os_errno, os.strerror(os_errno), path)
    shown = [d for d in loaded.diagnostics if d.severity != "info"]
    details = "".join(d.render() for d in shown)
    text = f"{message}\n{details}" if details else message
    if paths and any(d.code == "SL001" for d in shown):  # not UTF-8
        for p in paths:
            cause = _decode_error(p)
            if cause is not None:
                raise SectionDecodeError(text, shown, cause)
    raise SectionError(text, shown)


def _file_path(f: PathLike | bytes) -> tuple[bytes, str]:
    """The path's bytes as the OS takes them, and its name for messages (printable UTF-8).

    File names need not be UTF-8: ``os.fsencode`` undoes ``surrogateescape``, and bytes paths
    are taken as they are. A NUL byte is refused by the core, as ``open()`` refuses it.
    """
    path = Path(os.fsdecode(f))
    shown = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return os.fsencode(path), shown


def _file_paths(files: PathLike | bytes | Iterable[PathLike | bytes]) -> list[tuple[bytes, str]]:
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    return [_file_path(f) for f in files]


@entry_point
def load(
    files: PathLike | bytes | Iterable[PathLike | bytes], extra_tags: Iterable[str] = ()
) -> LoadedSections:
    r"""Reads and merges section files like the reference ``load_c_code``; raises on bad files.

    Args:
        files: A path or an iterable of paths (str, bytes or path-like); relative paths are
            relative to the working directory. Messages name each file as ``str(Path(f))``,
            the path as written, as PyTensor does.
        extra_tags: Section tags accepted besides the nine (a base class's own sections).

    Returns:
        The merged sections, which ``build()`` also takes in place of files.

    Raises:
        SectionError: A file the reference loader would refuse (an unknown tag, code before
            the first marker, ...); ``SectionDecodeError`` when it is not UTF-8.
        OSError: A file that cannot be read.

    Examples:
        >>> import libsection
        >>> from pathlib import Path
        >>> _ = Path("twice.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n")
        >>> loaded = libsection.load("twice.c")
        >>> loaded.sections
        {'code': '\nOUTPUT_0 = 2 * INPUT_0;\n'}
    """
    paths = _file_paths(files)
    # pybind11 takes bytes for std::string (file names need not be UTF-8); the stub says str.
    loaded = _core.load_sections(
        [raw for raw, _ in paths],  # type: ignore[misc]
        [shown for _, shown in paths],
        list(extra_tags),
    )
    raise_for(loaded, [raw for raw, _ in paths])
    return loaded


def load_texts(
    texts: list[str], names: list[str], extra_tags: Iterable[str] = ()
) -> LoadedSections:
    """Merges section-file texts already in memory (an unpickled op's ``func_codes``)."""
    loaded = _core.load_texts(list(texts), list(names), list(extra_tags))
    raise_for(loaded)
    return loaded


@entry_point
def load_sections(files: PathLike | bytes | Iterable[PathLike | bytes]) -> dict[str, str]:
    r"""The merged sections of files, exactly as the reference's ``code_sections``.

    Args:
        files: A path or an iterable of paths, as ``load()`` takes them.

    Returns:
        ``{tag: text}``.

    Raises:
        SectionError: A file the reference loader would refuse.
        OSError: A file that cannot be read.

    Examples:
        >>> import libsection
        >>> from pathlib import Path
        >>> _ = Path("twice.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n")
        >>> libsection.load_sections(["twice.c"])
        {'code': '\nOUTPUT_0 = 2 * INPUT_0;\n'}
    """
    return load(files).sections


def parse_text(text: str, filename: str = "<string>") -> LoadedSections:
    r"""Parses section-file text held in memory.

    Args:
        text: The file's text.
        filename: The name messages give the text.

    Returns:
        The sections. Never raises for content: what the reference would refuse is in
        ``.error``, every finding in ``.diagnostics``.

    Examples:
        >>> import libsection
        >>> loaded = libsection.parse_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n", "twice.c")
        >>> loaded.error is None, list(loaded.sections)
        (True, ['code'])
    """
    return _core.parse_text(text, filename)


def folder_of_class(cls: type) -> tuple[Path, str]:
    """The folder relative paths of ``cls`` (its func_files, its header folders) start from:
    that of the file that defines ``cls`` or, for a class defined where Python records no file
    (a notebook cell, a prompt, ``python -c``, stdin), the working directory; and where that
    is, for messages."""
    try:
        defined_in = inspect.getfile(cls)
    except (TypeError, OSError):  # no file: __main__ of a kernel or a prompt
        defined_in = "<no file>"
    if not defined_in.startswith("<"):  # "<stdin>", "<string>": no file either
        return Path(defined_in).parent, f"beside {defined_in}, which defines {cls.__name__}"
    return Path.cwd(), (
        f"in the working directory, since {cls.__name__} was defined where Python records "
        "no file (a notebook cell, a prompt, python -c)"
    )


def relative_to_class(cls: type, f: Path) -> Path:
    """``f`` (a func_files entry) as a path: relative paths are relative to the folder of
    ``cls`` (``folder_of_class``). A relative path that names no file raises
    ``FileNotFoundError`` saying where it was looked for, and why there."""
    if f.is_absolute():
        return f
    folder, why = folder_of_class(cls)
    path = (folder / f).resolve()
    if not path.exists():
        message = f"{cls.__name__}: section file {str(f)!r} not found: looked {why}"
        raise FileNotFoundError(errno.ENOENT, message, str(path))
    return path
