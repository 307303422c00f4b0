"""``python -m libsection editor-setup [DIR]``: what clangd needs to read the section files of DIR.

A section file is not a translation unit: the expander pastes each section into a generated
module, between macros that depend on the op and the node. clangd sees the file alone. This
writes, in DIR:

- ``.clangd``: the file is C++17 with Python's and NumPy's include folders, and
  ``libsection_editor.h`` (shipped in this package) included first, which declares the generated
  macros with stand-in values. ``#section`` lines are invalid directives to clang; their
  diagnostic (``pp_invalid_directive``) is suppressed. Its paths are relative to DIR, where a
  ``compile_flags.txt`` makes clangd resolve them: both can be committed, for every machine.
- ``.libsection-editor/``: what is this machine's, ignored by git and remade by each run: links
  to this environment's Python and NumPy header folders, and a copy of ``libsection_editor.h``.
- For each op folder whose class declares ``params``: a header under ``.libsection-editor/``
  declaring ``PARAMS_TYPE``'s fields and the ``DTYPE_PARAM_<field>`` macros, read from the
  ``op.py`` source (never imported) and included for that folder's files only.
- For each file with a section whose body is statements (``code``, ``init_code_struct``, ...):
  that text is at file scope to clang, which reports the statements as bad declarations. The
  diagnostics clang gives for statements at file scope (STATEMENT_DIAGNOSTICS) are suppressed in
  those files only; every other file keeps them. README.md, "In the editor", says what this hides.

Section tags and params types are read by the core's own parser, as the build reads them.

A folder may come from anyone (a cloned repository), so what is written there is written as
data: only regular files inside DIR, reached through descriptors of DIR and of its own
``.libsection-editor/`` and never through a link, each replaced atomically and only if it is
still the file that was read; a FIFO or device is never opened for reading; file and field
names are escaped (YAML double-quoted strings, quoted comments), so no name starts a line of
its own. A file editor-setup did not write is never replaced: a user's own ``.clangd`` gets
editor-setup's settings between two marker lines (``BEGIN``/``END``), and a header without
its first line (``HEADER_MARKER``) is refused with what to do.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import stat
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from . import _core
from ._editor_files import (
    SetupError,
    Target,
    kind_of,
    link,
    read_regular,
    subfolder,
    write_file,
)

#: Sections whose text the expander pastes into a function body (statements, not declarations).
STATEMENT_SECTIONS = frozenset(
    {
        "code",
        "code_cleanup",
        "init_code",
        "init_code_apply",
        "init_code_struct",
        "cleanup_code_struct",
    }
)

#: What clang reports for statements at file scope, suppressed in files with statement sections.
STATEMENT_DIAGNOSTICS = (
    "expected_unqualified_id",  # `{`, `if`, `for`, `return` where a declaration should be
    "missing_type_specifier",  # `x = 1;` read as a declaration of `x` without a type
    "unknown_typename",  # `free(p);` read as a declaration of `p` of type `free`
    "while_loop_outside_of_a_function",  # `do { } while (0)` (Py_XDECREF, FAIL)
    "redefinition_different_type",  # `n = 2;` after `npy_intp n = 1;`, read as a new `int n`
    "expected_expression",
    "extraneous_closing_brace",
)

#: The editor shim, shipped in the package beside this module.
SHIM = Path(__file__).resolve().parent / "include" / "libsection_editor.h"


@dataclass
class Setup:
    """What editor-setup writes for one folder of ops."""

    flags: list[str]
    statement_files: list[str] = field(default_factory=list)  # relative to the folder, posix
    params_headers: dict[str, str] = field(default_factory=dict)  # op folder -> header text
    links: dict[str, str] = field(default_factory=dict)  # name in HEADERS -> folder it points to


def include_folders() -> dict[str, str]:
    """Python's and NumPy's header folders, as the linker compiles with, by the name of their
    link in HEADERS (the one machine-local part of the setup)."""
    import numpy as np

    return {"python": sysconfig.get_paths()["include"], "numpy": np.get_include()}


def section_tags(path: Path) -> list[str]:
    # bytes: a file name need not be UTF-8 (the core reads it as the OS names it)
    loaded = _core.load_sections([os.fsencode(path)])  # type: ignore[list-item]
    return [block["tag"] for block in loaded.blocks]


def op_params(folder_fd: int, shown: str) -> dict[str, str]:
    """The ``params = {...}`` dict literal of the classes in the folder's ``op.py`` (read, not
    imported; none when it is absent, not a regular file or not Python)."""
    try:
        read = read_regular(folder_fd, "op.py", shown)
    except SetupError:
        return {}
    if read is None:
        return {}
    try:
        tree = ast.parse(read[0].decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    except (RecursionError, MemoryError) as e:  # nested deeper than CPython's parser goes
        raise SetupError(f"{shown}: CPython cannot parse it ({e}), nor import it") from None
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            value: ast.expr | None = None
            if isinstance(statement, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "params" for t in statement.targets
            ):
                value = statement.value
            elif (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.target.id == "params"
            ):
                value = statement.value
            if isinstance(value, ast.Dict):
                for key, type_ in zip(value.keys, value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(type_, ast.Constant):
                        if isinstance(key.value, str) and isinstance(type_.value, str):
                            found[key.value] = type_.value
    return found


#: The first line of every header editor-setup writes: how it knows its own.
HEADER_MARKER = "// Written by `python -m libsection editor-setup`"


def _c_comment_text(text: str) -> str:
    """``text`` quoted for a ``//`` comment: escaped, so no newline or trailing backslash of
    a file or field name can end the comment and put text on a line of its own."""
    return json.dumps(text)


def params_header(folder: str, params: dict[str, str]) -> str:
    """``PARAMS_TYPE`` and ``DTYPE_PARAM_<field>`` for an op with these params."""
    lines = [
        HEADER_MARKER,
        f"// from the `params` of {_c_comment_text(folder + '/op.py')}.",
        "#undef PARAMS_TYPE",
        "#undef PARAMS",
        "struct libsection_editor_op_params {",
    ]
    macros = []
    for name, type_ in params.items():
        try:
            spec = _core.parse_type(type_)
        except ValueError:
            spec = None
        if (
            spec is None
            or spec.kind == _core.TypeSpec.Kind.generic
            or not _C_IDENTIFIER.fullmatch(name)
        ):
            quoted = _c_comment_text(f"{name}: {type_}")
            lines.append(f"  // {quoted} (not a NumPy dtype: left out)")
            continue
        c_type = "npy_" + spec.dtype
        tensor = spec.kind == _core.TypeSpec.Kind.tensor
        lines.append(f"  {'PyArrayObject*' if tensor else c_type} {name};")
        macros.append(f"#define DTYPE_PARAM_{name} {c_type}")
    lines += [
        "};",
        "#define PARAMS_TYPE libsection_editor_op_params",
        "#define PARAMS libsection_editor_op_params_value",
        "extern PARAMS_TYPE* PARAMS;",
        *macros,
    ]
    return "\n".join(lines) + "\n"


_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def plan(directory: Path) -> tuple[Setup, list[str]]:
    """What to write for the section files under ``directory``, and notices of files left out
    (names clangd's settings cannot hold: not UTF-8)."""
    links = include_folders()
    # Relative to DIR: COMPILE_FLAGS there makes DIR the folder clangd runs the compiler in.
    setup = Setup(
        flags=[
            "-xc++",
            "-std=c++17",
            "-ferror-limit=0",  # suppressed errors still count towards clang's limit of 20
            *(f"-I{HEADERS}/{name}" for name in links),
            "-include",
            f"{HEADERS}/{SHIM.name}",
        ],
        links=links,
    )
    notices: list[str] = []
    skip = {".git", ".venv", "venv", "build", "dist", "node_modules", "__pycache__"}
    files = []
    for f in sorted(directory.rglob("*.c")):
        relative = f.relative_to(directory)
        if skip.intersection(relative.parts[:-1]):
            continue
        if not _utf8(relative.as_posix()):
            notices.append(f"left out {_shown(f)}: its name is not UTF-8, which .clangd holds")
            continue
        files.append(f)
    for path in files:
        if STATEMENT_SECTIONS.intersection(section_tags(path)):
            setup.statement_files.append(path.relative_to(directory).as_posix())
    for folder in sorted({f.parent for f in files}):
        try:
            folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            params = op_params(folder_fd, _shown(folder / "op.py"))
        finally:
            os.close(folder_fd)
        if params:
            rel = folder.relative_to(directory).as_posix()
            setup.params_headers[rel] = params_header(rel, params)
    return setup, notices


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # surrogate escapes: bytes that are not UTF-8
        return False
    return True


def _shown(path: Path | str) -> str:
    """A path for messages: printable whatever characters or bytes it holds."""
    text = os.fsdecode(path)
    return text if text.isprintable() else ascii(text)[1:-1]


def _yaml_list(items: list[str]) -> str:
    return "[" + ", ".join(_yaml_string(i) for i in items) + "]"


def _yaml_string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: every character that could end the string or
    the line (quotes, backslashes, newlines, any control or line-separator character) is an
    escape, so a file name is data however it is spelt."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif code < 0x20 or 0x7F <= code < 0xA0 or code in (0x2028, 0x2029, 0xFEFF):
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _header_name(folder: str) -> str:
    """The header file of an op folder: its name made safe and short enough for any file
    system, with a hash of the name when that changed it (two folders never share a header)."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", folder) or "_"
    if safe != folder or len(safe) > 100:
        safe = safe[:100] + "_" + hashlib.sha256(folder.encode("utf-8")).hexdigest()[:8]
    return safe + ".h"


#: The first line of a ``.clangd`` editor-setup wrote whole: how it knows its own.
CLANGD_MARKER = "# Written by `python -m libsection editor-setup`"
#: The lines around its settings in a user's own ``.clangd`` (recognised by these starts).
BEGIN_MARK, END_MARK = "# >>> libsection editor-setup", "# <<< libsection editor-setup"
BEGIN = BEGIN_MARK + ": the lines down to the `# <<<` one are rewritten when it runs again"
END = END_MARK

#: editor-setup's own folder in DIR: the params headers, a copy of the shim, and the links to
#: this environment's header folders. It ignores itself in git: it is the machine's, remade
#: by a run, while ``.clangd`` and ``compile_flags.txt`` hold relative paths only and are
#: committed once for everyone.
HEADERS = ".libsection-editor"
#: clangd runs the compiler in the folder of the nearest ``compile_flags.txt``: there, the
#: relative paths of ``.clangd`` resolve in DIR for the files of every subfolder.
COMPILE_FLAGS = "compile_flags.txt"
GITIGNORE_MARKER = "# Written by `python -m libsection editor-setup`"


def render_clangd(setup: Setup) -> str:
    """The fragments of ``.clangd``: one for every file, then per-file and per-folder ones."""
    parts = [
        "CompileFlags:\n"
        f"  Add: {_yaml_list(setup.flags)}\n"
        "Diagnostics:\n"
        "  # `#section` lines\n"
        "  Suppress: [pp_invalid_directive]\n"
    ]
    if setup.statement_files:
        patterns = [re.escape(f) for f in setup.statement_files]
        parts.append(
            "# Files with statement sections (code, init_code_struct, ...): clang reads that text\n"
            "# at file scope; what it reports for statements there is not shown in these files.\n"
            "If:\n"
            f"  PathMatch: {_yaml_list(patterns)}\n"
            "Diagnostics:\n"
            f"  Suppress: {_yaml_list(list(STATEMENT_DIAGNOSTICS))}\n"
        )
    for folder in setup.params_headers:
        header = f"{HEADERS}/{_header_name(folder)}"
        prefix = "" if folder == "." else re.escape(folder) + "/"
        parts.append(
            f"# {_c_comment_text(folder)}: the op's params\n"
            "If:\n"
            f"  PathMatch: {_yaml_list([prefix + '[^/]*'])}\n"
            "CompileFlags:\n"
            f"  Add: {_yaml_list(['-include', header])}\n"
        )
    return "---\n".join(parts)


_ABOUT = (
    "# clangd reads the section files here as C++ with the generated macros declared (see\n"
    '# README.md, "In the editor"). Run it again after adding an op, params or a statement\n'
    "# section.\n"
)


def clangd_text(existing: str | None, settings: str, shown: str) -> str:
    """The new ``.clangd``: editor-setup's own file, or a user's with ``settings`` between the
    BEGIN and END lines (replacing what an earlier run put there, or added at its end)."""
    if existing is None or existing.startswith(CLANGD_MARKER):
        return f"{CLANGD_MARKER}:\n{_ABOUT}{settings}"
    lines = existing.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.startswith(BEGIN_MARK)]
    ends = [i for i, line in enumerate(lines) if line.startswith(END_MARK)]
    block = f"{BEGIN}\n{_ABOUT}---\n{settings}{END}\n"
    if not begins and not ends:
        user = existing if existing.endswith("\n") or not existing else existing + "\n"
        return user + block
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise SetupError(
            f"{shown} holds your own settings, and its `# >>> libsection editor-setup` and "
            "`# <<< libsection editor-setup` lines are not one pair in that order: not "
            "changed. Remove those lines and what lies between them (editor-setup's part), "
            "then run again"
        )
    before, after = "".join(lines[: begins[0]]), "".join(lines[ends[0] + 1 :])
    if after.strip() and not after.lstrip().startswith("---"):
        after = "---\n" + after  # the user's fragment after ours stays a fragment of its own
    return before + block + after


def _own_files(setup: Setup) -> dict[str, tuple[str, str]]:
    """The files of HEADERS by name: (text, the first line that says editor-setup wrote it)."""
    files = {_header_name(f): (text, HEADER_MARKER) for f, text in setup.params_headers.items()}
    files[SHIM.name] = (
        f"{HEADER_MARKER}: a copy of libsection's, run it again after upgrading libsection\n"
        + SHIM.read_text(encoding="utf-8"),
        HEADER_MARKER,
    )
    files[".gitignore"] = (
        f"{GITIGNORE_MARKER}: this folder is this machine's (links into one Python\n"
        "# environment); .clangd and compile_flags.txt beside it are for commits.\n*\n",
        GITIGNORE_MARKER,
    )
    return files


def _header_targets(
    directory: Path, setup: Setup, headers_fd: int | None, problems: list[str]
) -> list[Target]:
    """The files to write in HEADERS; each one there must be editor-setup's (else a problem)."""
    targets = []
    for name, (text, marker) in _own_files(setup).items():
        shown = _shown(directory / HEADERS / name)
        try:
            read = read_regular(headers_fd, name, shown) if headers_fd is not None else None
        except SetupError as e:
            problems.append(str(e))
            continue
        if read is not None and not read[0].startswith(marker.encode()):
            problems.append(
                f"{shown} was not written by editor-setup (its first line is not "
                f"{marker!r}): not replaced; move it away and run again"
            )
            continue
        replaces = read[1] if read else None
        # None: the folder, made when writing
        targets.append(Target(headers_fd, name, text.encode(), replaces, shown, f"wrote {shown}"))
    for name in setup.links:
        shown = _shown(directory / HEADERS / name)
        if headers_fd is None:
            continue  # no folder yet, so no link
        try:
            mode = os.stat(name, dir_fd=headers_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISLNK(mode):
            problems.append(
                f"{shown} is {kind_of(mode)}, not the link editor-setup makes: not replaced; "
                "remove it and run again"
            )
    return targets


def _clangd_target(directory: Path, dir_fd: int, setup: Setup) -> Target:
    shown = _shown(directory / ".clangd")
    read = read_regular(dir_fd, ".clangd", shown)
    existing = None
    if read is not None:
        try:
            existing = read[0].decode("utf-8")
        except UnicodeDecodeError:
            raise SetupError(f"{shown} is not UTF-8: not changed") from None
    text = clangd_text(existing, render_clangd(setup), shown)
    ours = existing is None or existing.startswith(CLANGD_MARKER)
    message = (
        f"wrote {shown}"
        if ours
        else f"wrote editor-setup's settings into {shown}, between its "
        "`# >>> libsection editor-setup` and `# <<< libsection editor-setup` lines "
        "(your own settings are kept)"
    )
    return Target(
        dir_fd, ".clangd", text.encode("utf-8"), read[1] if read else None, shown, message
    )


def _compile_flags_target(directory: Path, dir_fd: int) -> Target | None:
    """A ``compile_flags.txt`` where there is none (any there already anchors the folder)."""
    try:
        os.stat(COMPILE_FLAGS, dir_fd=dir_fd, follow_symlinks=False)
        return None
    except FileNotFoundError:
        shown = _shown(directory / COMPILE_FLAGS)
        message = f"wrote {shown} (clangd resolves .clangd's paths from its folder)"
        return Target(dir_fd, COMPILE_FLAGS, b"-xc++\n", None, shown, message)


def write(directory: Path) -> tuple[list[str], list[str]]:
    """Writes the setup for ``directory``: what was written (one line each), and notices.
    Raises ``SetupError`` before writing anything when a file it would replace is not its
    own, not a regular file, or a link."""
    if not _utf8(str(directory)):
        raise SetupError(f"{_shown(directory)}: its name is not UTF-8, which .clangd holds")
    setup, notices = plan(directory)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    headers_fd: int | None = None
    try:
        problems: list[str] = []
        shown_headers = _shown(directory / HEADERS)
        try:  # made only once nothing is refused
            headers_fd = subfolder(dir_fd, HEADERS, shown_headers, create=False)
        except SetupError as e:
            problems.append(str(e))
        targets = [] if problems else _header_targets(directory, setup, headers_fd, problems)
        try:
            targets.append(_clangd_target(directory, dir_fd, setup))
        except SetupError as e:
            problems.append(str(e))
        anchor = _compile_flags_target(directory, dir_fd)
        if problems:
            raise SetupError("\n".join(problems))
        if headers_fd is None:
            headers_fd = subfolder(dir_fd, HEADERS, shown_headers, create=True)
        assert headers_fd is not None
        for target in targets:
            if target.folder_fd is None:
                target.folder_fd = headers_fd
            write_file(target)
        written = [t.message for t in targets]
        for name, folder in setup.links.items():
            link(headers_fd, name, folder)
            written.append(f"linked {_shown(directory / HEADERS / name)} to {_shown(folder)}")
        if anchor is not None:
            write_file(anchor)
            written.append(anchor.message)
        return written, notices
    finally:
        if headers_fd is not None:
            os.close(headers_fd)
        os.close(dir_fd)


def main(directory: Path) -> int:
    if not directory.is_dir():
        print(f"editor-setup: {_shown(directory)}: not a folder", file=sys.stderr)
        return 2
    try:
        written, notices = write(directory.resolve())
    except SetupError as e:
        for line in str(e).splitlines():
            print(f"editor-setup: {line}", file=sys.stderr)
        print("editor-setup: nothing was written", file=sys.stderr)
        return 1
    for notice in notices:
        print(f"editor-setup: {notice}", file=sys.stderr)
    for line in written:
        print(line)
    print(
        "clangd reads .clangd by itself; keep the Python environment this ran in "
        "(its include folders are written there)."
    )
    return 0
