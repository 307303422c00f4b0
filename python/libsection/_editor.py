"""``python -m libsection editor-setup [DIR]``: what clangd needs to read the section files of DIR.

A section file is not a translation unit: the expander pastes each section into a generated
module, between macros that depend on the op and the node. clangd sees the file alone. This
writes, in DIR:

- ``.clangd``: the file is C++17 with Python's and NumPy's include folders, and
  ``libsection_editor.h`` (shipped in this package) included first, which declares the generated
  macros with stand-in values. ``#section`` lines are invalid directives to clang; their
  diagnostic (``pp_invalid_directive``) is suppressed.
- For each op folder whose class declares ``params``: a header under ``.libsection-editor/``
  declaring ``PARAMS_TYPE``'s fields and the ``DTYPE_PARAM_<field>`` macros, read from the
  ``op.py`` source (never imported) and included for that folder's files only.
- For each file with a section whose body is statements (``code``, ``init_code_struct``, ...):
  that text is at file scope to clang, which reports the statements as bad declarations. The
  diagnostics clang gives for statements at file scope (STATEMENT_DIAGNOSTICS) are suppressed in
  those files only; every other file keeps them. README.md, "In the editor", says what this hides.

Section tags and params types are read by the core's own parser, as the build reads them.
"""

from __future__ import annotations

import ast
import re
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from . import _core

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


def include_flags() -> list[str]:
    """``-I`` for Python's and NumPy's headers, as the linker compiles with."""
    import numpy as np

    return ["-I" + sysconfig.get_paths()["include"], "-I" + np.get_include()]


def section_tags(path: Path) -> list[str]:
    return [block["tag"] for block in _core.load_sections([str(path)]).blocks]


def op_params(op_py: Path) -> dict[str, str]:
    """The ``params = {...}`` dict literal of the classes in ``op_py`` (read, not imported)."""
    try:
        tree = ast.parse(op_py.read_text())
    except (SyntaxError, UnicodeDecodeError):
        return {}
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


def params_header(folder: str, params: dict[str, str]) -> str:
    """``PARAMS_TYPE`` and ``DTYPE_PARAM_<field>`` for an op with these params."""
    lines = [
        f"// Written by `python -m libsection editor-setup` from {folder}/op.py's `params`.",
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
        if spec is None or spec.kind == _core.TypeSpec.Kind.generic or not name.isidentifier():
            lines.append(f"  // {name}: {type_} (not a NumPy dtype: left out)")
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


def plan(directory: Path) -> Setup:
    """What to write for the section files under ``directory``."""
    setup = Setup(
        flags=[
            "-xc++",
            "-std=c++17",
            "-ferror-limit=0",  # suppressed errors still count towards clang's limit of 20
            *include_flags(),
            "-include",
            str(SHIM),
        ]
    )
    skip = {".git", ".venv", "venv", "build", "dist", "node_modules", "__pycache__"}
    files = sorted(
        f
        for f in directory.rglob("*.c")
        if not skip.intersection(f.relative_to(directory).parts[:-1])
    )
    for path in files:
        if STATEMENT_SECTIONS.intersection(section_tags(path)):
            setup.statement_files.append(path.relative_to(directory).as_posix())
    for folder in sorted({f.parent for f in files}):
        params = op_params(folder / "op.py") if (folder / "op.py").is_file() else {}
        if params:
            rel = folder.relative_to(directory).as_posix()
            setup.params_headers[rel] = params_header(rel, params)
    return setup


def _yaml_list(items: list[str]) -> str:
    return "[" + ", ".join(_yaml_string(i) for i in items) + "]"


def _yaml_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _header_name(folder: str) -> str:
    return (re.sub(r"[^A-Za-z0-9_]", "_", folder) or "_") + ".h"


def render_clangd(directory: Path, setup: Setup) -> str:
    """The ``.clangd`` file: one fragment for every file, then per-file and per-folder ones."""
    parts = [
        "# Written by `python -m libsection editor-setup`: clangd reads the section files here as\n"
        '# C++ with the generated macros declared (see README.md, "In the editor"). Run it again\n'
        "# after adding an op, params or a statement section.\n"
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
        header = directory / ".libsection-editor" / _header_name(folder)
        prefix = "" if folder == "." else re.escape(folder) + "/"
        parts.append(
            f"# {folder}: the op's params\n"
            "If:\n"
            f"  PathMatch: {_yaml_string(prefix + '[^/]*')}\n"
            "CompileFlags:\n"
            f"  Add: {_yaml_list(['-include', str(header)])}\n"
        )
    return "---\n".join(parts)


def write(directory: Path) -> list[Path]:
    """Writes the setup for ``directory``; returns the files written."""
    setup = plan(directory)
    written = []
    if setup.params_headers:
        (directory / ".libsection-editor").mkdir(exist_ok=True)
        for folder, text in setup.params_headers.items():
            header = directory / ".libsection-editor" / _header_name(folder)
            header.write_text(text)
            written.append(header)
    clangd = directory / ".clangd"
    clangd.write_text(render_clangd(directory, setup))
    written.append(clangd)
    return written


def main(directory: Path) -> int:
    if not directory.is_dir():
        print(f"editor-setup: {directory}: not a folder")
        return 2
    for path in write(directory.resolve()):
        print(f"wrote {path}")
    print(
        "clangd reads .clangd by itself; keep the Python environment this ran in "
        "(its include folders are written there)."
    )
    return 0
