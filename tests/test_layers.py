"""The library's layers: no file of libsection includes a layer above its own, and the Python
package's: no module imports one above its own (import-linter, pyproject.toml's contracts).

The stages of libsection/src, lowest first: base (source, text, hashing, diagnostics and their
rendering, diagnostic codes, the platform file, the log sink), parse (reading, the section
scanner and its checks, the C scanner), types (type strings, signatures, C types, the op
description), expand, and then the linker and the linter, which never include each other. The
linker is rooms along its data: cache (the on-disk cache) and generate (graph to module source)
side by side, which never include each other, then build (flags, key, compiler), which uses
both, then the linker's face (src/linker/*.cpp, section/linker.hpp: the section op). A public
header belongs to the stage or room that implements it (the table below); a header added without
an entry fails the test, so each new one is placed on purpose.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "libsection"

RANK = {
    "base": 0,
    "parse": 1,
    "types": 2,
    "expand": 3,
    "lint": 4,
    "linker/cache": 4,
    "linker/generate": 4,
    "linker/build": 5,
    "linker": 6,
}
ROOMS = ("cache", "generate", "build")  # of the linker: libsection/src/linker/<room>/

PUBLIC = {
    "source.hpp": "base",
    "diagnostic.hpp": "base",
    "render.hpp": "base",
    "codes.hpp": "base",
    "version.hpp": "base",
    "platform.hpp": "base",
    "settings.hpp": "base",
    "chars.hpp": "base",
    "bounded_cache.hpp": "base",
    "read.hpp": "parse",
    "parse.hpp": "parse",
    "dtype.hpp": "types",
    "signature.hpp": "types",
    "names.hpp": "types",
    "ctype.hpp": "types",
    "op.hpp": "types",
    "expand.hpp": "expand",
    "log.hpp": "base",
    "linker/cache/error.hpp": "linker/cache",
    "linker/cache/private_dir.hpp": "linker/cache",
    "linker/cache/file_lock.hpp": "linker/cache",
    "linker/cache/manifest.hpp": "linker/cache",
    "linker/cache/cache.hpp": "linker/cache",
    "linker/generate/graph.hpp": "linker/generate",
    "linker/generate/module.hpp": "linker/generate",
    "linker/generate/derivative.hpp": "linker/generate",
    "linker/generate/batch_plan.hpp": "linker/generate",
    "linker/build/build.hpp": "linker/build",
    "linker.hpp": "linker",
    "lint.hpp": "lint",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of_path(parts: list[str]) -> str | None:
    """The layer of a path below src/ or include/section/ given as its parts (a file's name
    last), or None outside the library's stages."""
    if parts[0] == "linker" and len(parts) > 2 and parts[1] in ROOMS:
        return f"linker/{parts[1]}"
    return parts[0] if parts[0] in RANK and len(parts) > 1 else None


def layer_of_include(name: str) -> str | None:
    """The layer of `#include "name"`, or None for a header outside the library."""
    if name.startswith("section/"):
        header = name.removeprefix("section/")
        assert header in PUBLIC, f"public header section/{header} has no layer in {__file__}"
        return PUBLIC[header]
    return layer_of_path(name.split("/"))


def layer_of_file(path: Path) -> str:
    relative = path.relative_to(LIBRARY)
    if relative.parts[0] == "include":
        return PUBLIC[relative.relative_to("include/section").as_posix()]
    layer = layer_of_path(list(relative.parts[1:])) if relative.parts[0] == "src" else None
    assert layer is not None, f"{relative}: not in a stage folder"
    return layer


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
    public = LIBRARY / "include" / "section"
    headers = {p.relative_to(public).as_posix() for p in public.rglob("*.hpp")}
    assert headers == set(PUBLIC), "update PUBLIC: " + ", ".join(sorted(headers ^ set(PUBLIC)))


def test_no_file_includes_a_layer_above_it() -> None:
    assert upward_includes(library_files()) == []


def test_an_upward_include_is_found() -> None:
    """The check itself can fail: a parse file including the expander and the linker."""
    probe = LIBRARY / "src" / "parse" / "probe.cpp"
    text = '#include "section/expand.hpp"\n#include "linker/cache/files.hpp"\n#include <vector>\n'
    assert upward_includes([(probe, text)]) == [
        "libsection/src/parse/probe.cpp (parse) includes section/expand.hpp (expand)",
        "libsection/src/parse/probe.cpp (parse) includes linker/cache/files.hpp (linker/cache)",
    ]


def test_the_linker_and_the_linter_do_not_include_each_other() -> None:
    probe = LIBRARY / "src" / "lint" / "probe.cpp"
    assert upward_includes([(probe, '#include "section/linker.hpp"\n')]) == [
        "libsection/src/lint/probe.cpp (lint) includes section/linker.hpp (linker)"
    ]


def test_the_linker_rooms_include_along_the_data() -> None:
    """Generation and the cache never include each other; the build room may use both, but
    neither of them the build room, and no room the linker's face."""
    src = LIBRARY / "src" / "linker"
    probes = [
        (src / "cache" / "probe.cpp", '#include "section/linker/generate/module.hpp"\n'),
        (src / "generate" / "probe.cpp", '#include "linker/cache/files.hpp"\n'),
        (src / "generate" / "probe.cpp", '#include "linker/build/compile.hpp"\n'),
        (src / "build" / "probe.cpp", '#include "section/linker.hpp"\n'),
        (src / "build" / "fine.cpp", '#include "linker/cache/files.hpp"\n'),
        (src / "fine.cpp", '#include "linker/build/compile.hpp"\n'),
    ]
    assert upward_includes(probes) == [
        "libsection/src/linker/cache/probe.cpp (linker/cache) includes"
        " section/linker/generate/module.hpp (linker/generate)",
        "libsection/src/linker/generate/probe.cpp (linker/generate) includes"
        " linker/cache/files.hpp (linker/cache)",
        "libsection/src/linker/generate/probe.cpp (linker/generate) includes"
        " linker/build/compile.hpp (linker/build)",
        "libsection/src/linker/build/probe.cpp (linker/build) includes section/linker.hpp (linker)",
    ]


# ---------------------------------------------------------------- the Python package

PACKAGE = ROOT / "python" / "libsection"


def python_layers_report(tmp_path: Path, edits: dict[str, str] | None = None) -> tuple[int, str]:
    """import-linter's verdict on pyproject.toml's contracts for the package's sources (a copy,
    with ``edits`` appended to the files they name): the exit status and the report. The
    compiled core imports nothing of the package; its place is taken by an empty module, so an
    import of it is not read as one of the package itself."""
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "libsection"
    copy.mkdir()
    for source in PACKAGE.glob("*.py"):
        shutil.copy(source, copy / source.name)
    (copy / "_core.py").write_text('"""The compiled core."""\n')
    for name, text in (edits or {}).items():
        (copy / name).write_text((copy / name).read_text() + text)
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint_imports, "import-linter is pinned in deps/requirements.txt"
    result = subprocess.run(
        [lint_imports, "--config", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result.returncode, result.stdout + result.stderr


def test_the_python_package_keeps_its_layers(tmp_path) -> None:
    """The standalone op below the node machinery, below the drop-in, below the features, the
    backends reached only through the backend table (pyproject.toml's contracts)."""
    status, report = python_layers_report(tmp_path)
    assert status == 0, report


def test_an_import_that_climbs_is_found(tmp_path) -> None:
    """The check itself can fail: the node machinery importing the drop-in, and the drop-in a
    backend module (even inside a function)."""
    status, report = python_layers_report(
        tmp_path,
        {
            "_node.py": "\nfrom . import _dropin\n",
            "_dropin.py": "\n\ndef _numba_now():\n    from . import _numba\n",
        },
    )
    assert status != 0
    assert "libsection._node is not allowed to import libsection._dropin" in report, report
    assert "libsection._dropin is not allowed to import libsection._numba" in report, report
