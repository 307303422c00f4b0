"""section-lint's command-line conventions, as ruff has them: which files a folder yields
(default excludes, .gitignore, exclude/extend-exclude), settings read as TOML 1.0, fixes
(`--unsafe-fixes`, the summary), colour from the environment, and the gitlab and junit formats
checked against what GitLab and JUnit readers expect.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import xml.etree.ElementTree as ET

import jsonschema
import pytest
from test_section_lint import LINT_DIR, RETURN_IN_CODE, SECTION_LINT, lint, write

pytestmark = pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")

CLEAN = "#section support_code\nint helper(void) { return 0; }\n"


def linted_files(result):
    """The files with findings, relative and sorted, from a `--output-format json` run."""
    assert result.returncode in (0, 1), result.stderr
    return sorted({os.path.normpath(r["filename"]) for r in json.loads(result.stdout)})


def lint_json(*args, cwd):
    return linted_files(lint("--output-format", "json", *args, cwd=cwd))


# ---- file selection ---------------------------------------------------------------------------


def test_folders_leave_out_ruffs_default_excludes(tmp_path):
    write(tmp_path / "ops" / "op.c", RETURN_IN_CODE)
    for folder in [
        "venv/lib",
        ".venv/lib",
        "build/gen",
        "dist",
        "node_modules/pkg",
        "__pycache__",
        "env/lib/python3.12/site-packages/numpy/core/include",
        ".tox/py312",
        ".nox/x",
        ".mypy_cache",
        "_build",
        "buck-out",
        "__pypackages__/3.12",
    ]:
        write(tmp_path / folder / "bad.c", RETURN_IN_CODE)
    assert lint_json(".", cwd=tmp_path) == ["ops/op.c"]
    # A file named on the command line is linted wherever it is.
    assert lint_json("venv/lib/bad.c", "ops", cwd=tmp_path) == ["ops/op.c", "venv/lib/bad.c"]


def git_repository(path):
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_gitignore_is_respected_like_git(tmp_path):
    repo = git_repository(tmp_path)
    write(
        repo / ".gitignore",
        "# generated sources\n"
        "/generated/\n"  # anchored folder
        "*.gen.c\n"  # a name anywhere
        "!keep.gen.c\n"  # negation
        "out?/\n"  # `?`, folders only
        "**/scratch/*.c\n"  # `**/` at any depth
        "docs/**/draft.c\n"  # `/**/` zero or more folders
        "notafolder.c/\n",  # trailing `/`: folders only, so the file stays
    )
    keep = [
        "src/op.c",
        "src/keep.gen.c",
        "src/generated/op.c",  # `/generated/` is anchored to the top
        "src/out12/op.c",  # `?` is one character
        "notafolder.c",
        "sub/op.c",
    ]
    ignored = [
        "generated/op.c",
        "src/x.gen.c",
        "out1/op.c",
        "a/b/scratch/op.c",
        "scratch/op.c",
        "docs/draft.c",
        "docs/a/b/draft.c",
        "sub/local.c",  # nested .gitignore
        "sub/deeper/local.c",
        "private.c",  # .git/info/exclude
    ]
    write(repo / "sub" / ".gitignore", "local.c\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("private.c\n")
    for name in keep + ignored:
        write(repo / name, RETURN_IN_CODE)
    assert lint_json(".", cwd=repo) == sorted(keep)
    assert lint_json("--no-respect-gitignore", ".", cwd=repo) == sorted(keep + ignored)
    # Named files are linted though ignored; a folder named is walked, its ignored files left out.
    assert lint_json("src/x.gen.c", cwd=repo) == ["src/x.gen.c"]
    assert lint_json("generated", cwd=repo) == ["generated/op.c"]
    # The setting does what the flag does; the command line wins over it.
    write(repo / "section-lint.toml", "respect-gitignore = false\n")
    assert lint_json(".", cwd=repo) == sorted(keep + ignored)
    assert lint_json("--respect-gitignore", ".", cwd=repo) == sorted(keep)


def test_gitignore_outside_a_repository_is_not_read(tmp_path):
    # As in ruff (and git): a .gitignore means something only inside a git repository.
    write(tmp_path / ".gitignore", "*.c\n")
    write(tmp_path / "op.c", RETURN_IN_CODE)
    assert lint_json(".", cwd=tmp_path) == ["op.c"]


def test_exclude_and_extend_exclude_in_settings_and_on_the_command_line(tmp_path):
    for name in ["ops/op.c", "ops/legacy/old.c", "ops/old_x.c", "third_party/lib.c", "venv/v.c"]:
        write(tmp_path / name, RETURN_IN_CODE)
    everything_but_venv = ["ops/legacy/old.c", "ops/old_x.c", "ops/op.c", "third_party/lib.c"]
    assert lint_json(".", cwd=tmp_path) == everything_but_venv
    # extend-exclude adds to the defaults: a bare name anywhere, a path from the settings folder.
    write(
        tmp_path / "pyproject.toml",
        '[tool.section-lint]\nextend-exclude = ["legacy", "third_party/*.c"]\n',
    )
    assert lint_json(".", cwd=tmp_path) == ["ops/old_x.c", "ops/op.c"]
    assert lint_json("--extend-exclude", "old_*.c", ".", cwd=tmp_path) == ["ops/op.c"]
    # exclude replaces the default list (venv is linted again); extend-exclude still applies.
    write(
        tmp_path / "pyproject.toml",
        '[tool.section-lint]\nexclude = ["ops/old_*"]\nextend-exclude = ["legacy"]\n',
    )
    assert lint_json(".", cwd=tmp_path) == ["ops/op.c", "third_party/lib.c", "venv/v.c"]
    # --exclude replaces the settings' exclude.
    assert lint_json("--exclude", "venv,third_party", ".", cwd=tmp_path) == [
        "ops/old_x.c",
        "ops/op.c",
    ]
    # --isolated: no settings, the defaults only.
    assert lint_json("--isolated", ".", cwd=tmp_path) == everything_but_venv
    # Named files are always linted.
    assert lint_json("--exclude", "*.c", "ops/op.c", cwd=tmp_path) == ["ops/op.c"]


# ---- settings: TOML 1.0 through toml++ ----------------------------------------------------------


def test_inline_tables_and_multi_line_strings_in_settings(tmp_path):
    write(
        tmp_path / "section-lint.toml",
        'per-file-ignores = { "old.c" = ["SL5"] }\n'
        "[signatures.'ops/*.c']\n"
        'inputs = """\\\n    float64[:],\\\n    float64[:]"""\n'
        "func-name = '''APPLY_SPECIFIC(vtv)'''\n",
    )
    assert lint(write(tmp_path / "old.c", RETURN_IN_CODE)).returncode == 0
    assert lint(write(tmp_path / "new.c", RETURN_IN_CODE)).returncode == 1
    vtv = (
        "#section support_code_apply\n"
        "int APPLY_SPECIFIC(vtv)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) {\n"
        "    DTYPE_INPUT_2* w = 0; return 0;\n}\n"
    )
    result = lint("--output-format", "json", write(tmp_path / "ops" / "vtv.c", vtv))
    assert [r["code"] for r in json.loads(result.stdout)] == ["SL601"], result.stderr


@pytest.mark.parametrize(
    "text, where",
    [
        ('select = ["SL1"\n', ":1:17: Error while parsing array"),  # toml++'s own errors
        ("x = 1\nx = 2\n", ":2:5: Error while parsing key-value pair: cannot redefine"),
        ('\n\nignore = "SL5"\n', ":3:10: `ignore` must be an array of strings"),
        ("[per-file-ignores]\n'a.c' = [1]\n", ':2:10: `per-file-ignores."a.c"` must be an array'),
        ("\n  selct = []\n", ":2:3: unknown setting `selct`"),
    ],
)
def test_settings_errors_name_the_file_line_and_column(tmp_path, text, where):
    settings = write(tmp_path / "section-lint.toml", text)
    result = lint(write(tmp_path / "a.c", RETURN_IN_CODE))
    assert result.returncode == 2
    assert f"{settings}{where}" in result.stderr, result.stderr


def test_dot_section_lint_toml_is_read_first_as_ruff_reads_dot_ruff_toml(tmp_path):
    # ruff, in each folder: .ruff.toml, then ruff.toml, then pyproject.toml's [tool.ruff].
    bad = write(tmp_path / "bad.c", RETURN_IN_CODE)
    write(tmp_path / "pyproject.toml", '[tool.section-lint]\nignore = ["SL501"]\n')
    assert lint(bad).returncode == 0
    write(tmp_path / "section-lint.toml", "ignore = []\n")
    assert lint(bad).returncode == 1
    write(tmp_path / ".section-lint.toml", 'ignore = ["SL5"]\n')
    assert lint(bad).returncode == 0
    assert lint("--isolated", bad).returncode == 1


# ---- fixes, summary, colour ---------------------------------------------------------------------

MISSPELT_TAG = "#section suport_code_apply\nint APPLY_SPECIFIC(x);\n"  # SL201: an unsafe fix


def test_unsafe_fixes_are_hidden_counted_and_applied_on_request(tmp_path):
    path = write(tmp_path / "op.c", MISSPELT_TAG)
    result = lint(path)
    assert (
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
        in result.stdout
    )
    with_bom = write(tmp_path / "bom.c", "\ufeff#section support_code\nint a;\n" + MISSPELT_TAG)
    assert (
        "[*] 1 fixable with the `--fix` option "
        "(1 hidden fix can be enabled with the `--unsafe-fixes` option).\n" in lint(with_bom).stdout
    )
    assert "[*] 2 fixable with the `--fix` option.\n" in lint("--unsafe-fixes", with_bom).stdout
    # --fix alone leaves the unsafe fix; with --unsafe-fixes it is applied.
    assert lint("--fix", path).returncode == 1 and path.read_text() == MISSPELT_TAG
    diff = lint("--diff", "--unsafe-fixes", path)
    assert diff.returncode == 1 and "+#section support_code_apply\n" in diff.stdout
    fixed = lint("--fix", "--unsafe-fixes", path)
    assert path.read_text() == "#section support_code_apply\nint APPLY_SPECIFIC(x);\n"
    assert fixed.returncode == 0 and "Fixed 1 finding" in fixed.stdout, fixed.stdout
    # SL101 (an indented marker) has an unsafe fix too.
    indented = write(tmp_path / "indented.c", "#section support_code\nint a;\n  #section code\n")
    lint("--fix", "--unsafe-fixes", indented)
    assert indented.read_text() == "#section support_code\nint a;\n#section code\n"


UNUSED_SUPPRESSION = "#section support_code\nint unused = 0; // section-lint: ignore[SL401]\n"
FIXED = "#section support_code\nint unused = 0; \n"  # SL901's safe fix removes the comment


def test_fix_keeps_the_mode_and_fixes_a_links_target(tmp_path):
    target = write(tmp_path / "real" / "op.c", UNUSED_SUPPRESSION)
    target.chmod(0o640)
    link = tmp_path / "link.c"
    link.symlink_to(target)
    assert lint("--fix", link).returncode == 0
    assert target.read_text() == FIXED and link.is_symlink()
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["op.c"]  # nothing left beside
    # A name as long as the file system allows still has room for the file written beside it.
    long = write(tmp_path / ("x" * 250 + ".c"), UNUSED_SUPPRESSION)
    assert lint("--fix", long).returncode == 0 and long.read_text() == FIXED


def test_fix_keeps_the_files_newlines(tmp_path):
    """The linter reads CRLF and CR as LF; the file it rewrites keeps its own newlines."""
    for newline in ("\r\n", "\r"):
        path = tmp_path / f"op{len(newline)}.c"
        path.write_bytes(UNUSED_SUPPRESSION.replace("\n", newline).encode())
        assert lint("--fix", path).returncode == 0
        assert path.read_bytes() == FIXED.replace("\n", newline).encode()


def closes_after_reading(path):
    """An inotify descriptor that becomes readable once `path` is closed after a read."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    assert fd >= 0, os.strerror(ctypes.get_errno())
    in_close_nowrite = 0x10
    assert libc.inotify_add_watch(fd, os.fsencode(path), in_close_nowrite) >= 0
    return fd


def test_fix_never_overwrites_an_edit_made_after_it_read_the_file(tmp_path):
    """The user appends to a file after `--fix` read it, before it writes the fix (the linter
    is stopped in between, while it lints other files): the edit stays, the file is reported
    as not fixed, and the next run fixes it."""
    target = write(tmp_path / "a.c", UNUSED_SUPPRESSION)
    # Seconds of lint work after a.c is read: time enough to stop the linter in between.
    big = "#section support_code\n" + "".join(f"static int v{i} = {i};\n" for i in range(60_000))
    for i in range(40):
        write(tmp_path / "more" / f"f{i:02}.c", big)
    watch = closes_after_reading(target)
    try:
        run = subprocess.Popen(
            [SECTION_LINT, "--fix", str(target), str(tmp_path / "more")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            ready, _, _ = select.select([watch], [], [], 120)  # a hang guard
            assert ready, "section-lint never read the file"
            run.send_signal(signal.SIGSTOP)
            assert target.read_text() == UNUSED_SUPPRESSION, "written before it could be stopped"
            with target.open("a") as f:
                f.write("int users_edit;\n")
            run.send_signal(signal.SIGCONT)
            out, err = run.communicate(timeout=600)
        finally:
            if run.poll() is None:
                run.kill()
                run.communicate()
    finally:
        os.close(watch)
    assert target.read_text() == UNUSED_SUPPRESSION + "int users_edit;\n"
    assert f"{target}: not fixed: it changed since it was linted" in err, err
    assert "Fixed 0 findings" in out, out
    lint("--fix", target)
    assert target.read_text() == FIXED + "int users_edit;\n"


def test_a_clean_run_says_all_checks_passed(tmp_path):
    clean = write(tmp_path / "clean.c", CLEAN)
    for fmt in ["full", "concise"]:
        result = lint("--output-format", fmt, clean)
        assert result.returncode == 0 and result.stdout == "All checks passed!\n"
    assert lint("-q", clean).stdout == ""


@pytest.mark.parametrize(
    "env, color",
    [
        ({}, False),
        ({"FORCE_COLOR": "1"}, True),
        ({"FORCE_COLOR": ""}, False),
        ({"CLICOLOR_FORCE": "1"}, True),
        ({"CLICOLOR_FORCE": "0"}, False),
        ({"NO_COLOR": "1"}, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, True),  # ruff: FORCE_COLOR overrides
        ({"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, True),  # the colored crate: so does this
    ],
)
def test_force_color_and_clicolor_force_as_ruff_reads_them(tmp_path, env, color):
    bad = write(tmp_path / "bad.c", RETURN_IN_CODE)
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR")
    }
    out = subprocess.run(
        [SECTION_LINT, str(bad)], capture_output=True, text=True, env={**base, **env}
    ).stdout
    assert ("\x1b[" in out) == color
    never = subprocess.run(
        [SECTION_LINT, "--color", "never", str(bad)],
        capture_output=True,
        text=True,
        env={**base, **env},
    ).stdout
    assert "\x1b[" not in never, "--color wins over the environment"


# ---- gitlab and junit -------------------------------------------------------------------------

# GitLab's Code Quality report (docs.gitlab.com/ci/testing/code_quality, "Code Quality report
# format"): an array of issues; GitLab requires description, check_name, fingerprint, severity,
# location.path and location.lines.begin (or location.positions.begin.line).
GITLAB_CODE_QUALITY_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string"},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {
                            "begin": {"type": "integer", "minimum": 1},
                            "end": {"type": "integer", "minimum": 1},
                        },
                    },
                    "positions": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {
                            "begin": {
                                "type": "object",
                                "required": ["line"],
                                "properties": {"line": {"type": "integer", "minimum": 1}},
                            }
                        },
                    },
                },
                "anyOf": [{"required": ["lines"]}, {"required": ["positions"]}],
            },
        },
    },
}


def test_gitlab_output_is_a_code_quality_report(tmp_path):
    validator = jsonschema.Draft7Validator(GITLAB_CODE_QUALITY_SCHEMA)
    for target in ["formats", "fixtures"]:
        result = lint("--output-format", "gitlab", target)
        report = json.loads(result.stdout)
        errors = sorted(validator.iter_errors(report), key=str)
        assert not errors, errors[0]
        assert report
        fingerprints = [issue["fingerprint"] for issue in report]
        assert len(set(fingerprints)) == len(fingerprints), "GitLab needs them unique"
        for issue in report:
            assert issue["description"].startswith(issue["check_name"] + ": ")
    # Stable across runs, and paths relative to the project for GitLab to link them.
    assert json.loads(lint("--output-format", "gitlab", "formats").stdout) == json.loads(
        lint("--output-format", "gitlab", "formats").stdout
    )
    in_ci = subprocess.run(
        [SECTION_LINT, "--output-format", "gitlab", str(LINT_DIR / "formats")],
        capture_output=True,
        text=True,
        env={**os.environ, "CI_PROJECT_DIR": str(LINT_DIR.parent)},
    )
    assert {i["location"]["path"] for i in json.loads(in_ci.stdout)} == {"lint/formats/op.c"}
    assert lint("--output-format", "gitlab", write(tmp_path / "c.c", CLEAN)).stdout == "[]\n"


def test_gitlab_schema_check_can_fail():
    report = json.loads(lint("--output-format", "gitlab", "formats").stdout)
    del report[0]["location"]["lines"]
    assert list(jsonschema.Draft7Validator(GITLAB_CODE_QUALITY_SCHEMA).iter_errors(report))


def check_junit(text):
    """What JUnit readers (GitLab's and Jenkins' test reports) take: <testsuites> of
    <testsuite name tests failures errors> of <testcase name classname>, each failure with a
    message; the counts add up."""
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    suites = list(root)
    assert suites and all(s.tag == "testsuite" for s in suites)
    total = failures = 0
    for suite in suites:
        assert {"name", "tests", "failures", "errors"} <= suite.attrib.keys()
        cases = [c for c in suite if c.tag == "testcase"]
        assert int(suite.get("tests")) == len(cases)
        failed = [c for c in cases if c.find("failure") is not None]
        assert int(suite.get("failures")) == len(failed) and suite.get("errors") == "0"
        for case in cases:
            assert case.get("name") and case.get("classname") is not None
            failure = case.find("failure")
            if failure is not None:
                assert failure.get("message") and failure.text.startswith("line ")
                assert int(case.get("line")) >= 1 and int(case.get("column")) >= 1
                assert set(case) <= {case.find("properties"), failure}
        total += len(cases)
        failures += len(failed)
    assert int(root.get("tests")) == total and int(root.get("failures")) == failures
    return root


def test_junit_output_is_junit_xml(tmp_path):
    for target in ["formats", "fixtures"]:
        result = lint("--output-format", "junit", target)
        root = check_junit(result.stdout)
        records = json.loads(lint("--output-format", "json", target).stdout)
        assert int(root.get("failures")) == len(records)
        cases = root.findall("./testsuite/testcase")
        assert {c.get("name") for c in cases} == {f"org.section-lint.{r['code']}" for r in records}
    clean = check_junit(lint("--output-format", "junit", write(tmp_path / "c.c", CLEAN)).stdout)
    assert clean.get("failures") == "0" and clean.find("./testsuite/testcase") is not None
    # Text that is not UTF-8, or markup, still makes well-formed XML.
    odd = write(tmp_path / "odd.c", "")
    odd.write_bytes(b"#section suport_code<&\xff\n")
    check_junit(lint("--output-format", "junit", odd).stdout)
