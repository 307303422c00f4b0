"""The library's layers: no file of libsection includes a layer above its own.

The stages of libsection/src, lowest first: base (source, text, hashing, diagnostics and their
rendering, diagnostic codes, the platform file), parse (reading, the section scanner and its
checks, the C scanner), types (type strings, signatures, C types, the op description), expand,
and then the linker and the linter, which sit side by side and never include each other. A
public header belongs to the stage that implements it (the table below); a header added without
an entry fails the test, so each new one is placed on purpose.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "libsection"

RANK = {"base": 0, "parse": 1, "types": 2, "expand": 3, "linker": 4, "lint": 4}

PUBLIC = {
    "source.hpp": "base",
    "diagnostic.hpp": "base",
    "render.hpp": "base",
    "codes.hpp": "base",
    "version.hpp": "base",
    "platform.hpp": "base",
    "settings.hpp": "base",
    "read.hpp": "parse",
    "parse.hpp": "parse",
    "dtype.hpp": "types",
    "signature.hpp": "types",
    "names.hpp": "types",
    "ctype.hpp": "types",
    "op.hpp": "types",
    "expand.hpp": "expand",
    "module.hpp": "linker",
    "private_dir.hpp": "linker",
    "file_lock.hpp": "linker",
    "manifest.hpp": "linker",
    "cache.hpp": "linker",
    "linker.hpp": "linker",
    "log.hpp": "linker",
    "lint.hpp": "lint",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of_include(name: str) -> str | None:
    """The layer of `#include "name"`, or None for a header outside the library."""
    if name.startswith("section/"):
        header = name.removeprefix("section/")
        assert header in PUBLIC, f"public header section/{header} has no layer in {__file__}"
        return PUBLIC[header]
    first = name.split("/", 1)[0]
    return first if first in RANK else None


def layer_of_file(path: Path) -> str:
    relative = path.relative_to(LIBRARY)
    if relative.parts[0] == "include":
        return PUBLIC[relative.name]
    assert relative.parts[0] == "src" and relative.parts[1] in RANK, (
        f"{relative}: not in a stage folder"
    )
    return relative.parts[1]


def library_files() -> list[tuple[Path, str]]:
    paths = sorted(p for p in LIBRARY.rglob("*") if p.suffix in (".cpp", ".hpp"))
    return [(p, p.read_text(encoding="utf-8")) for p in paths]


def upward_includes(files: list[tuple[Path, str]]) -> list[str]:
    found = []
    for path, text in files:
        own = layer_of_file(path)
        for name in INCLUDE.findall(text):
            target = layer_of_include(name)
            if target is None or target == own:
                continue
            if RANK[target] >= RANK[own]:  # the same rank: the linker and the linter
                found.append(f"{path.relative_to(ROOT)} ({own}) includes {name} ({target})")
    return found


def test_every_public_header_has_a_layer() -> None:
    headers = {p.name for p in (LIBRARY / "include" / "section").glob("*.hpp")}
    assert headers == set(PUBLIC), "update PUBLIC: " + ", ".join(sorted(headers ^ set(PUBLIC)))


def test_no_file_includes_a_layer_above_it() -> None:
    assert upward_includes(library_files()) == []


def test_an_upward_include_is_found() -> None:
    """The check itself can fail: a parse file including the expander and the linker."""
    probe = LIBRARY / "src" / "parse" / "probe.cpp"
    text = '#include "section/expand.hpp"\n#include "linker/files.hpp"\n#include <vector>\n'
    assert upward_includes([(probe, text)]) == [
        "libsection/src/parse/probe.cpp (parse) includes section/expand.hpp (expand)",
        "libsection/src/parse/probe.cpp (parse) includes linker/files.hpp (linker)",
    ]


def test_the_linker_and_the_linter_do_not_include_each_other() -> None:
    probe = LIBRARY / "src" / "lint" / "probe.cpp"
    assert upward_includes([(probe, '#include "section/linker.hpp"\n')]) == [
        "libsection/src/lint/probe.cpp (lint) includes section/linker.hpp (linker)"
    ]
