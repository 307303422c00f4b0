"""``python -m libsection [PATH...]``: show what libsection makes of section files.

For every op folder (or file) given, default ``ops/``: each section with the file and line of
its blocks, and every diagnostic. Exit status 1 if any file has an error.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import _core


def _op_groups(paths: list[Path]) -> list[list[Path]]:
    """Each folder's .c files form one op (they load together); a file alone is its own op."""
    groups: list[list[Path]] = []
    for path in paths:
        if path.is_dir():
            folders = sorted({f.parent for f in path.rglob("*.c")})
            groups += [sorted(folder.glob("*.c")) for folder in folders]
        else:
            groups.append([path])
    return groups


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m libsection", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[Path("ops")])
    args = parser.parse_args(argv)

    failed = False
    for files in _op_groups(args.paths):
        start = time.perf_counter()
        loaded = _core.load_sections([str(f) for f in files])
        elapsed_ms = (time.perf_counter() - start) * 1e3
        print(f"== {', '.join(map(str, files))}  (parsed in {elapsed_ms:.2f} ms)")
        for block in loaded.blocks:
            lines = block["text"].count("\n")
            print(f"  {block['filename']}:{block['line']}:{block['column']}: "
                  f"#section {block['tag']}  ({lines} lines)")
        for diagnostic in loaded.diagnostics:
            print("  " + diagnostic.render().rstrip("\n").replace("\n", "\n  "))
        if loaded.error is not None:
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
