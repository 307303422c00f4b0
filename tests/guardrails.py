"""The project's own checks, in one place: clang-format, clang-tidy, ruff and mypy.

tests/test_guardrails.py runs each check (so `./dev test` does); `./dev format` runs
`python3 tests/guardrails.py format`, which rewrites the C++ sources with clang-format and the
Python code with ruff format. Settings live in .clang-format, .clang-tidy and pyproject.toml.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLANG_FORMAT = "clang-format-14"
CLANG_TIDY = "clang-tidy-14"
# The C++ that clang-format keeps in shape; clang-tidy looks at the library alone.
CXX_FOLDERS = [
    "libsection",
    "tools",
    "python/src",
    "python/runtime",
    "python/libsection",
    "tests/unit",
    "tests/fuzz",
]
CXX_SUFFIXES = {".cpp", ".hpp", ".h"}
TIDY_FOLDER = "libsection/src"
PYTHON_PACKAGE = "python/libsection"
# What ruff lints and formats: the package (every rule set of pyproject.toml) and the tests,
# benchmarks and example ops (pycodestyle, Pyflakes and import order: per-file-ignores there).
RUFF_FOLDERS = [PYTHON_PACKAGE, "tests", "bench", "ops"]


def cxx_files() -> list[Path]:
    """Every C++ source and header under CXX_FOLDERS, and the benchmarks' C++ files."""
    files = [
        p
        for folder in CXX_FOLDERS
        for p in (ROOT / folder).rglob("*")
        if p.suffix in CXX_SUFFIXES and p.is_file()
    ]
    return sorted(files + list((ROOT / "bench").glob("*.cpp")))


def tidy_files() -> list[Path]:
    return sorted((ROOT / TIDY_FOLDER).rglob("*.cpp"))


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A check's run from the repository root (where the configuration files are)."""
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)


def clang_format(fix: bool = False) -> subprocess.CompletedProcess[str]:
    mode = ["-i"] if fix else ["--dry-run", "--Werror"]
    return run([CLANG_FORMAT, *mode, *map(str, cxx_files())])


def clang_tidy(build_dir: Path, jobs: int | None = None) -> tuple[int, str]:
    """clang-tidy on each library source, `jobs` at a time (default: one per core), against the
    compile database of `build_dir`. Returns the number of files with findings and their output."""

    def one(path: Path) -> subprocess.CompletedProcess[str]:
        return run([CLANG_TIDY, "--quiet", "-p", str(build_dir), str(path)])

    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        results = list(pool.map(one, tidy_files()))
    failed = [r for r in results if r.returncode != 0]
    return len(failed), "\n".join(r.stdout + r.stderr for r in failed)


def ruff_check() -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "ruff", "check", "--no-fix", *RUFF_FOLDERS])


def ruff_format(fix: bool = False) -> subprocess.CompletedProcess[str]:
    return run(
        [sys.executable, "-m", "ruff", "format", *([] if fix else ["--check"]), *RUFF_FOLDERS]
    )


def mypy() -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "mypy"])  # its files and options are in pyproject.toml


def format_tree() -> int:
    """Rewrites every file the format checks look at; returns 0 when both formatters ran."""
    status = 0
    for result in (clang_format(fix=True), ruff_format(fix=True)):
        sys.stdout.write(result.stdout + result.stderr)
        status = status or result.returncode
    return status


if __name__ == "__main__":
    if sys.argv[1:] != ["format"]:
        sys.exit(f"usage: {sys.argv[0]} format")
    sys.exit(format_tree())
