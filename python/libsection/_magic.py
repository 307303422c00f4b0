"""The ``%%section`` cell magic (``%load_ext libsection``): section code written in a notebook.

::

    %%section vector_add.c --inputs float64[:],float64[:] --outputs float64[:]
    #section support_code_apply
    int APPLY_SPECIFIC(vector_add)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) { ... }

As ``%%cython`` does, the cell builds at once: with ``--outputs``, the op is compiled from the
cell and defined in the notebook as ``vector_add`` (the file's stem, or ``--name``), a
``libsection.CompiledOp``. The cell's text also becomes ``vector_add.c`` in the working
directory, which is where the relative ``func_files`` of an op class defined in a notebook are
looked up, and running the cell again replaces the file (and rebuilds). The file starts with an
empty line in place of the magic line, so its line N is the cell's line N as the notebook's
gutter counts it: the findings of ``section-lint`` (run on the cell at once: the same rules,
settings and suppressions) and a compile's errors name the cell's own lines, shown under the
cell without libsection's traceback frames. ``--expand`` also shows what each section becomes
for the signature, as ``section-expand`` does, highlighted.
"""

from __future__ import annotations

import contextlib
import keyword
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

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


def _signature(args: Any) -> list[str]:
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


@magic_arguments("%section")  # the usage line says %%section: IPython adds one %
@argument("name", nargs="?", metavar="NAME.c", help="the section file's name: NAME.c or NAME.h")
@argument("--inputs", help="the op's input types, e.g. float64[:],float64[:]")
@argument("--outputs", help="the op's output types, e.g. float64[:]: the cell builds the op")
@argument("--params", help="params fields, e.g. k:int64 (lint only: their values come from an op)")
@argument("--func-name", help="the op's main function, e.g. APPLY_SPECIFIC(f)")
@argument("--language", choices=["c", "c++"], help="the cell's language (default c++)")
@argument("--extra-sections", action="append", default=[], help="more tags (lint only)")
@argument("--name", dest="op_name", metavar="NAME", help="the name the op is defined as")
@argument("--no-build", action="store_true", help="write and lint the cell, build nothing")
@argument("--expand", action="store_true", help="show what each section becomes")
@argument("-h", "--help", action="store_true", help="show this help")
def section(line: str, cell: str) -> None:
    """Writes the cell to NAME.c in the working directory, lints it and, given ``--outputs``,
    builds the op and defines it in the notebook (as NAME, or ``--name``)."""
    args = parse_argstring(section, line)  # a bad option: one UsageError naming it
    parser = section.parser  # set by magic_arguments
    if args.help:  # printed once, without the reST marker IPython puts before the usage
        print(parser.format_help().removeprefix("::\n\n  ").rstrip())
        return
    name = args.name
    if name is None:
        parser.error("the following arguments are required: NAME.c")
    if Path(name).name != name or not name.endswith((".c", ".h")) or name.startswith("."):
        raise UsageError(
            f"%%section: {name!r} must be a plain file name ending in .c or .h (it is written "
            "to the working directory, where an op class defined in a notebook finds it)"
        )
    builds = bool(args.outputs) and not args.no_build and name.endswith(".c")
    op_name = args.op_name or Path(name).stem
    if builds:
        if not op_name.isidentifier() or keyword.iskeyword(op_name):
            raise UsageError(f"%%section: {op_name!r} is not a Python name: give --name NAME")
        if args.params or args.extra_sections:
            raise UsageError(
                "%%section: an op with --params or --extra-sections is built from its class, "
                "not from the cell: add --no-build"
            )
    if args.expand and not (args.inputs and args.outputs):
        raise UsageError("%%section --expand needs --inputs and --outputs")
    path = Path.cwd() / name
    # A byte order mark pasted with the cell: a cell has no encoding to mark, and the file is
    # UTF-8 without one (after the empty first line, the mark would be stray text before the
    # first section; even at a file's start, the reference loaders read it as text).
    cell = cell.removeprefix("\ufeff")
    try:
        # An empty first line in place of the magic's: the file's lines are the cell's.
        _write_atomically(path, "\n" + cell)
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
        expand = subprocess.run(
            [_tool("section-expand"), *_signature(args), name],
            capture_output=True,
            text=True,
            check=False,
        )
        if expand.returncode != 0:
            print(expand.stderr.strip(), file=sys.stderr)
        else:
            from IPython.display import display

            display(_highlighted(expand.stdout))
    if builds:
        _build_into_notebook(op_name, path, args)


def _build_into_notebook(op_name: str, path: Path, args: Any) -> None:
    """Builds the op of the cell's file and defines it as ``op_name`` in the notebook. An error
    is libsection's own (``CompileError``, ``SectionError``, ...), naming the cell's lines; the
    notebook shows its class and message only (IPython's ``_render_traceback_``), since the
    frames are libsection's code, not the user's."""
    from IPython import get_ipython

    from ._build import build
    from ._load import load

    shell = get_ipython()
    try:
        sections = load([str(path)])
        if args.func_name is None and "code" not in sections.sections:
            raise UsageError(
                "%%section: the cell has no `code` section: give --func-name NAME, the function "
                "the op calls (e.g. --func-name 'APPLY_SPECIFIC(f)')"
            )
        op = build(
            sections,
            args.func_name,
            inputs=[t for t in (args.inputs or "").split(",") if t],
            outputs=[t for t in args.outputs.split(",") if t],
            name=op_name,
            language=args.language or "c++",
        )
    except Exception as e:
        # The op an earlier run of the cell defined is gone: no later cell runs stale code.
        if shell is not None and shell.user_ns.get(op_name) is _defined.pop(op_name, None):
            shell.user_ns.pop(op_name, None)
        shown = [f"{type(e).__name__}: {e}"]
        e._render_traceback_ = lambda: shown  # type: ignore[attr-defined]
        raise e.with_traceback(None) from None
    if shell is not None:
        shell.user_ns[op_name] = _defined[op_name] = op


#: The ops the magic defined, by name: what a failed rebuild of the same cell removes.
_defined: dict[str, object] = {}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext libsection``: registers the ``%%section`` cell magic."""
    ipython.register_magic_function(section, magic_kind="cell", magic_name="section")
