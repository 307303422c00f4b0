"""The project's own checks, in one place: clang-format, clang-tidy, ruff and mypy, and the
size limits of the C++ and of the C files the library embeds (functions, files, C text kept in
strings).

tests/test_guardrails.py runs each check (so `./dev test` does); `./dev format` runs
`python3 tests/guardrails.py format`, which rewrites the C++ and C sources with clang-format and
the Python code with ruff format. Settings live in .clang-format, .clang-tidy and pyproject.toml.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLANG_FORMAT = "clang-format-14"
CLANG_TIDY = "clang-tidy-14"
# The C++ that clang-format keeps in shape, with the C text modules get (libsection's embedded
# .c/.h files, libsection/CMakeLists.txt); clang-tidy looks at the library alone.
CXX_FOLDERS = [
    "libsection",
    "tools",
    "python/src",
    "python/runtime",
    "python/libsection",
    "tests/unit",
    "tests/fuzz",
]
CXX_SUFFIXES = {".cpp", ".hpp", ".h", ".c"}
TIDY_FOLDER = "libsection/src"
PYTHON_PACKAGE = "python/libsection"
# What ruff lints and formats: the package (every rule set of pyproject.toml) and the tests,
# benchmarks and example ops (pycodestyle, Pyflakes and import order: per-file-ignores there).
RUFF_FOLDERS = [PYTHON_PACKAGE, "tests", "bench", "ops"]


def cxx_files() -> list[Path]:
    """Every C++ (and C) source and header under CXX_FOLDERS, and the benchmarks' C++ files."""
    files = [
        p
        for folder in CXX_FOLDERS
        for p in (ROOT / folder).rglob("*")
        if p.suffix in CXX_SUFFIXES and p.is_file()
    ]
    return sorted(files + list((ROOT / "bench").glob("*.cpp")))


# The sizes past which C++ (and the embedded C) is split along its parts: a function's lines and
# cyclomatic complexity (lizard's counts), a source file's lines, and C text kept in a C++ string
# (generated code that is not assembled per module belongs in a C file, embedded at build time).
MAX_FUNCTION_LINES = 80
MAX_FUNCTION_COMPLEXITY = 20
MAX_SOURCE_LINES = 700
MAX_STRING_LINES = 40

RAW_STRING = re.compile(r'R"([^()\\\s"]{0,16})\((.*?)\)\1"', re.S)


def oversized_functions(files: list[tuple[str, str]]) -> dict[str, str]:
    """The functions of `files` ((name, text) pairs) past the limits: qualified name -> where
    and how large."""
    import lizard

    found = {}
    for name, text in files:
        for f in lizard.analyze_file.analyze_source_code(name, text).function_list:
            if f.name == "TEST_SUITE":  # doctest's suite of test cases, not a function
                continue
            if f.length > MAX_FUNCTION_LINES or f.cyclomatic_complexity > MAX_FUNCTION_COMPLEXITY:
                found[f.name] = (
                    f"{name}:{f.start_line}: {f.length} lines, complexity {f.cyclomatic_complexity}"
                )
    return found


def long_strings(name: str, text: str) -> list[str]:
    """The C++ strings of `text` over MAX_STRING_LINES lines: raw strings, and runs of lines
    that are string literals (comments between them do not end a run)."""
    found = []
    for m in RAW_STRING.finditer(text):
        lines = m.group(2).count("\n") + 1
        if lines > MAX_STRING_LINES:
            found.append(f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {lines} lines")
    run, start = 0, 0
    for number, line in enumerate(text.split("\n") + [""], 1):
        stripped = line.strip()
        if stripped.startswith('"') or (run and stripped.startswith("//")):
            start = start if run else number
            run += stripped.startswith('"')
            continue
        if run > MAX_STRING_LINES:
            found.append(f"{name}:{start}: {run} lines")
        run = 0
    return found


def cxx_texts() -> list[tuple[str, str]]:
    """(path from the root, text) of every C++ file the checks look at."""
    return [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in cxx_files()]


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
