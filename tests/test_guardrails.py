"""The project's guardrails: formatting, static analysis and type checks (tests/guardrails.py).

A failure prints the tool's own findings; `./dev format` fixes the formatting ones.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import guardrails
import pytest

STACK = "py%d%d" % sys.version_info[:2]
# The library's C++ is the same on every stack: clang-tidy runs once, on the lower bound's build.
TIDY_STACK = "py311"


def require(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} not found: deps/install.sh installs it (deps/apt-packages.txt)")


def report(result) -> str:
    return f"exit {result.returncode}\n{result.stdout}{result.stderr}"


def test_cxx_sources_are_clang_formatted():
    require(guardrails.CLANG_FORMAT)
    assert len(guardrails.cxx_files()) > 50
    result = guardrails.clang_format()
    assert result.returncode == 0, "run ./dev format\n" + report(result)


def test_the_embedded_c_files_are_checked():
    """The C text modules get (the files libsection/CMakeLists.txt embeds) is formatted and
    measured like the C++ that embeds it."""
    cmake = (guardrails.ROOT / "libsection/CMakeLists.txt").read_text()
    embedded = re.search(r"foreach\(c_file ([^)]*)\)", cmake).group(1).split()
    assert {"runtime.c", "batch.c", "prelude.h"} <= set(embedded)
    folder = guardrails.ROOT / "libsection/src/linker/generate"
    assert {folder / name for name in embedded} <= set(guardrails.cxx_files())


def test_clang_format_style_rejects_a_misformatted_file(tmp_path):
    """The check above can fail: the same style refuses code laid out otherwise."""
    require(guardrails.CLANG_FORMAT)
    bad = tmp_path / "bad.cpp"
    bad.write_text("int  f( int x ){return x;}\n")
    style = f"--style=file:{guardrails.ROOT / '.clang-format'}"
    result = guardrails.run([guardrails.CLANG_FORMAT, style, "--dry-run", "--Werror", str(bad)])
    assert result.returncode != 0


def test_every_clang_tidy_check_named_in_the_config_is_enabled():
    """A misspelt check name would silently check nothing."""
    require(guardrails.CLANG_TIDY)
    config = (guardrails.ROOT / ".clang-tidy").read_text()
    checks_value = config.split("Checks:", 1)[1].split("WarningsAsErrors:", 1)[0]
    named = set(re.findall(r"^\s+([a-z][a-z0-9.-]+),?$", checks_value, re.M))
    listed = guardrails.run(
        [guardrails.CLANG_TIDY, "--list-checks", str(guardrails.tidy_files()[0])]
    )
    enabled = set(re.findall(r"^\s+([a-z][a-z0-9.-]+)$", listed.stdout, re.M))
    assert len(named) >= 10
    assert named == enabled


@pytest.mark.skipif(STACK != TIDY_STACK, reason=f"clang-tidy runs on the {TIDY_STACK} build only")
def test_library_passes_clang_tidy():
    require(guardrails.CLANG_TIDY)
    build_dir = guardrails.ROOT / f"build/wheel-{STACK}"
    if not (build_dir / "compile_commands.json").is_file():
        pytest.fail(f"no {build_dir}/compile_commands.json: build with ./dev test")
    failed, output = guardrails.clang_tidy(build_dir)
    assert failed == 0, output


@pytest.mark.skipif(STACK != TIDY_STACK, reason=f"clang-tidy runs on the {TIDY_STACK} build only")
def test_compile_database_has_each_library_source():
    """clang-tidy checks each source with its own command. A unity build lists only its unity
    files, and clang-tidy would guess the sources' flags: deps/install.sh turns unity off."""
    database = guardrails.ROOT / f"build/wheel-{STACK}/compile_commands.json"
    if not database.is_file():
        pytest.fail(f"no {database}: build with ./dev test")
    listed = {Path(entry["file"]).resolve() for entry in json.loads(database.read_text())}
    missing = [str(path) for path in guardrails.tidy_files() if path.resolve() not in listed]
    assert missing == []


def test_python_package_passes_ruff_check():
    result = guardrails.ruff_check()
    assert result.returncode == 0, report(result)


def test_python_package_is_ruff_formatted():
    result = guardrails.ruff_format()
    assert result.returncode == 0, "run ./dev format\n" + report(result)


def test_python_package_passes_mypy():
    result = guardrails.mypy()
    assert result.returncode == 0, report(result)


def test_pre_commit_hooks_check_the_same_files():
    """.pre-commit-config.yaml's hooks cover exactly the files the checks above look at."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((guardrails.ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert set(hooks) == {"clang-format", "ruff-check", "ruff-format", "mypy"}
    cpp_suffixes = {".cpp", ".hpp", ".h", ".c", ".cc", ".cxx", ".hxx"}
    tracked = [
        p
        for p in guardrails.ROOT.rglob("*")
        if p.suffix in cpp_suffixes and p.relative_to(guardrails.ROOT).parts[0] != "build"
    ]
    # pre-commit tags a .h file "c" and "c++", a .c file "c" alone: the embedded C needs both.
    assert set(hooks["clang-format"]["types_or"]) == {"c++", "c"}
    pattern = hooks["clang-format"]["files"]
    in_hook = {p for p in tracked if re.match(pattern, p.relative_to(guardrails.ROOT).as_posix())}
    assert in_hook == set(guardrails.cxx_files())
    assert hooks["mypy"]["files"] == "^" + guardrails.PYTHON_PACKAGE + "/"
    ruff_folders = "^(" + "|".join(guardrails.RUFF_FOLDERS) + ")/"
    for hook_id in ("ruff-check", "ruff-format"):
        assert hooks[hook_id]["files"] == ruff_folders


# The functions allowed past the size limits (three at most), each with why.
LARGE_FUNCTIONS = {
    # Not a function: lizard reads a LintRule's designated initializer (its long documentation
    # string) in parse/checks.cpp as one.
    "section::detail::type": "a rule's table entry",
}


def test_cxx_functions_stay_small():
    """No function over 80 lines or of complexity over 20, but the few named above: in the C++
    and in the C files the library embeds."""
    assert len(LARGE_FUNCTIONS) <= 3
    found = guardrails.oversized_functions(guardrails.cxx_texts())
    assert {n: w for n, w in found.items() if n not in LARGE_FUNCTIONS} == {}


def test_cxx_sources_stay_small():
    long = [
        f"{name}: {text.count(chr(10))} lines"
        for name, text in guardrails.cxx_texts()
        if text.count("\n") > guardrails.MAX_SOURCE_LINES
    ]
    assert long == []


def test_no_c_text_is_kept_in_a_long_cxx_string():
    found = [
        s for name, text in guardrails.cxx_texts() for s in guardrails.long_strings(name, text)
    ]
    assert found == []


def test_the_size_checks_find_what_they_look_for():
    """Each limit, passed by one line or one branch, is found."""
    ifs = "".join(f"  if (x == {i}) return {i};\n" for i in range(20))

    def statements(n: int) -> str:  # a function of n + 3 lines
        return "".join(f"  x += {i};\n" for i in range(n))

    found = guardrails.oversized_functions(
        [
            ("a.cpp", "int branchy(int x) {\n" + ifs + "  return 0;\n}\n"),
            ("b.cpp", "int fine(int x) {\n" + ifs[: ifs.rindex("  if")] + "  return 0;\n}\n"),
            ("c.cpp", "int longer(int x) {\n" + statements(78) + "  return x;\n}\n"),
            ("d.cpp", "int short_enough(int x) {\n" + statements(77) + "  return x;\n}\n"),
        ]
    )
    assert set(found) == {"branchy", "longer"}

    def raw(lines: int) -> str:  # a raw string spanning `lines` lines
        return 'char const* t = R"c(' + "int x;\n" * (lines - 1) + 'int x;)c";\n'

    def pieces(lines: int) -> str:  # `lines` literals, a comment between each two
        return "char const* t =\n" + '    // a note\n    "int x;\\n"\n' * lines + "    ;\n"

    assert guardrails.long_strings("raw.cpp", raw(41)) == ["raw.cpp:1: 41 lines"]
    assert guardrails.long_strings("pieces.cpp", pieces(41)) == ["pieces.cpp:3: 41 lines"]
    assert guardrails.long_strings("raw.cpp", raw(40)) == []
    assert guardrails.long_strings("pieces.cpp", pieces(40)) == []
