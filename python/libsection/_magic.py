"""The ``%%section`` cell magic (``%load_ext libsection``): section code written in a notebook.

::

    %%section vector_add.c --inputs float64[:],float64[:] --outputs float64[:]
    #section support_code_apply
    int APPLY_SPECIFIC(vector_add)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) { ... }

The cell's text becomes ``vector_add.c`` in the working directory, which is where the relative
``func_files`` of an op class defined in a notebook are looked up: the next cell's class uses
``func_files = ["vector_add.c"]`` unchanged, and running the cell again replaces the file (the
next op built from it recompiles). The cell is linted at once by ``section-lint`` (the same
rules, settings and suppressions), its findings shown in the cell's output with the cell's
own line numbers (the file holds exactly the cell's lines), and so are a compile's errors.
``--expand`` also shows what each section becomes for the signature, as ``section-expand``
does, highlighted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["load_ipython_extension"]


def _tool(name: str) -> str:
    """A libsection tool: the one installed beside this Python, else the one on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is neither beside {sys.executable} nor on PATH")
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%%section", add_help=False, exit_on_error=False)
    parser.add_argument("name", help="the section file's name, NAME.c")
    parser.add_argument("--inputs", help="the op's input types, e.g. float64[:],float64[:]")
    parser.add_argument("--outputs", help="the op's output types, e.g. float64[:]")
    parser.add_argument("--params", help="params fields, e.g. k:int64")
    parser.add_argument("--func-name", help="the op's main function, e.g. APPLY_SPECIFIC(f)")
    parser.add_argument("--language", choices=["c", "c++"], help="lint the cell as C: c")
    parser.add_argument("--extra-sections", action="append", default=[])
    parser.add_argument("--expand", action="store_true", help="show what each section becomes")
    return parser


def _write_atomically(path: Path, text: str) -> None:
    """Writes ``text`` (UTF-8) to ``path`` so that a reader never sees half a file: a new file
    beside it (never through a link), renamed over it. Whatever fails, or interrupts it,
    leaves no temporary file behind."""
    # At most 255 bytes, however long the name: a long NAME.c must not fail for its temporary.
    temporary = path.with_name(f".{path.name[:100]}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _signature(args) -> list[str]:
    out = []
    for option in ("inputs", "outputs", "params", "func_name"):
        value = getattr(args, option)
        if value:
            out += [f"--{option.replace('_', '-')}", value]
    return out


def _highlighted(text: str):
    """The expansion as highlighted HTML (pygments comes with IPython), or plain text."""
    try:
        from IPython.display import HTML
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import CppLexer
    except ImportError:
        return text
    return HTML(highlight(text, CppLexer(), HtmlFormatter(noclasses=True)))


def section(line: str, cell: str):
    """``%%section NAME.c [--inputs T] [--outputs T] [--params P] [--func-name F]
    [--language c] [--extra-sections TAGS] [--expand]``: writes the cell to NAME.c in the
    working directory, lints it (as C with ``--language c``) and shows the findings at the
    cell's lines; with ``--expand``, also what each section becomes for the signature."""
    from IPython.core.error import UsageError
    from IPython.display import display

    try:
        args = _parser().parse_args(shlex.split(line))
    except (argparse.ArgumentError, SystemExit) as e:
        raise UsageError(f"%%section: {e}; usage: {_parser().format_usage().strip()}") from None
    name = args.name
    if Path(name).name != name or not name.endswith((".c", ".h")) or name.startswith("."):
        raise UsageError(
            f"%%section: {name!r} must be a plain file name ending in .c or .h (it is written "
            "to the working directory, where an op class defined in a notebook finds it)"
        )
    path = Path.cwd() / name
    try:
        _write_atomically(path, cell)
    except (OSError, UnicodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise UsageError(f"%%section: cannot write {path}: {why} (nothing was written)") from None

    extra = [f"--extra-sections={tags}" for tags in args.extra_sections]
    if args.language:
        extra.append(f"--language={args.language}")
    lint = subprocess.run(
        [_tool("section-lint"), "--color", "never", *extra, *_signature(args), name],
        capture_output=True,
        text=True,
        check=False,
    )
    report = (lint.stdout + lint.stderr).strip()
    if report:
        print(report)
    if args.expand:
        if not (args.inputs and args.outputs):
            raise UsageError("%%section --expand needs --inputs and --outputs")
        expand = subprocess.run(
            [_tool("section-expand"), *_signature(args), name],
            capture_output=True,
            text=True,
            check=False,
        )
        if expand.returncode != 0:
            print(expand.stderr.strip(), file=sys.stderr)
        else:
            display(_highlighted(expand.stdout))


def load_ipython_extension(ipython) -> None:
    """``%load_ext libsection``: registers the ``%%section`` cell magic."""
    ipython.register_magic_function(section, magic_kind="cell", magic_name="section")
