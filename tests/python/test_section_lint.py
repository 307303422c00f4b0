"""section-lint as users run it: exit codes, the seven output formats (snapshots), the SARIF
schema, suppressions, rule selection, signature options, and speed on 1,000 files.

The binary is taken from $SECTION_LINT, else from PATH, else from the newest build/*/ tree.
LIBSECTION_UPDATE_GOLDEN=1 rewrites the format snapshots.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_DIR = ROOT / "tests" / "lint"
FORMATS = ["full", "concise", "json", "sarif", "github", "gitlab", "junit"]


def find_section_lint():
    if os.environ.get("SECTION_LINT"):
        return os.path.abspath(os.environ["SECTION_LINT"])
    on_path = shutil.which("section-lint")
    if on_path:
        return on_path
    built = sorted(
        ROOT.glob("build/*/tools/section-lint/section-lint"), key=lambda p: p.stat().st_mtime
    )
    return str(built[-1]) if built else None


SECTION_LINT = find_section_lint()
pytestmark = pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")


def lint(*args, cwd=LINT_DIR):
    return subprocess.run([SECTION_LINT, *map(str, args)], cwd=cwd, capture_output=True, text=True)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_format_matches_snapshot(fmt):
    result = lint("--output-format", fmt, "formats")
    assert result.returncode == 1, result.stderr
    snapshot = LINT_DIR / "snapshots" / f"formats.{fmt}.txt"
    if os.environ.get("LIBSECTION_UPDATE_GOLDEN") == "1":
        snapshot.write_text(result.stdout)
    assert result.stdout == snapshot.read_text()


def test_sarif_output_is_valid_sarif_2_1_0():
    schema = json.loads((LINT_DIR / "sarif-schema-2.1.0.json").read_text())
    validator = jsonschema.Draft4Validator(schema)
    for target in ["formats", "fixtures"]:
        log = json.loads(lint("--output-format", "sarif", target).stdout)
        errors = sorted(validator.iter_errors(log), key=str)
        assert not errors, errors[0]
        assert log["runs"][0]["results"]


def test_sarif_schema_check_can_fail():
    schema = json.loads((LINT_DIR / "sarif-schema-2.1.0.json").read_text())
    log = json.loads(lint("--output-format", "sarif", "formats").stdout)
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert list(jsonschema.Draft4Validator(schema).iter_errors(log))


def test_json_records_have_the_documented_keys():
    records = json.loads(lint("--output-format", "json", "formats").stdout)
    assert records
    for r in records:
        assert {
            "code",
            "severity",
            "message",
            "filename",
            "location",
            "end_location",
            "fix",
            "url",
        } <= r.keys()
        assert set(r["location"]) == {"row", "column"}
    assert any(r["fix"] is None for r in records) and any(r["fix"] for r in records)


def test_github_annotations_drop_columns_for_multi_line_ranges():
    lines = lint("--output-format", "github", "formats").stdout.splitlines()
    assert all(re.match(r"^::(error|warning|notice) file=[^,]+,line=\d+,", line) for line in lines)
    multi = [line for line in lines if "(SL903)" in line]
    assert multi and ",col=" not in multi[0]


def test_exit_codes(tmp_path):
    clean = write(tmp_path / "clean.c", "#section support_code\nint helper(void) { return 0; }\n")
    info_only = write(
        tmp_path / "info.c",
        "#section support_code\n#section support_code_apply\nint APPLY_SPECIFIC(x);\n",
    )
    bad = write(tmp_path / "bad.c", "#section code\nreturn 1;\n")
    assert lint(clean).returncode == 0
    assert lint(info_only).returncode == 0, "info findings alone do not fail a run"
    assert lint(bad).returncode == 1
    assert lint("--exit-zero", bad).returncode == 0
    assert lint(tmp_path / "missing.c").returncode == 2  # a usage error, as in ruff
    for usage_error in (
        [],
        ["--no-such-option", clean],
        ["--output-format", "xml", clean],
        ["--select", "SL8", clean],
        ["--inputs", "float64[", clean],
        ["--explain", "SL999"],
    ):
        result = lint(*usage_error)
        assert result.returncode == 2, (usage_error, result.stdout, result.stderr)
        assert result.stderr
    assert lint("--help").returncode == 0
    version = lint("--version")
    assert version.returncode == 0 and version.stdout.startswith("section-lint ")


def test_explain_and_list_rules():
    explained = lint("--explain", "sl401")
    assert explained.returncode == 0
    assert explained.stdout.startswith("# SL401 (missing-apply-specific)")
    assert "## Use instead" in explained.stdout
    # Every code of the table, not only the linter's: the expander's and the compiler's too.
    for code, heading in (("se104", "# SE104 (bad-function-name)"), ("compile-warning", None)):
        explained = lint("--explain", code)
        assert explained.returncode == 0, explained.stderr
        assert explained.stdout.startswith(heading or f"# {code}\n")
        assert "## What it does" in explained.stdout
    listed = lint("--list-rules").stdout.splitlines()
    codes = [line.split()[0] for line in listed]
    assert codes == sorted(codes) and {"SL001", "SL301", "SL401", "SL501", "SL601", "SL901"} <= set(
        codes
    )


def codes_in(result):
    return [r["code"] for r in json.loads(result.stdout)]


def test_suppressions(tmp_path):
    path = write(
        tmp_path / "s.c",
        "#section code\n"
        "if (a) return 1; // section-lint: ignore[SL501]\n"
        "if (b) return 2;\n"
        "x = 1; // section-lint: ignore[SL302, SL77]\n",
    )
    assert codes_in(lint("--output-format", "json", path)) == ["SL501", "SL901", "SL902"]
    assert codes_in(lint("--output-format", "json", "--ignore", "SL9", path)) == ["SL501"]
    write(
        tmp_path / "s.c",
        "#section code\n// section-lint: ignore-file[SL501]\nreturn 1;\nreturn 2;\n",
    )
    assert lint(path).returncode == 0


def test_select_and_ignore_by_prefix():
    assert set(codes_in(lint("--output-format", "json", "--select", "SL2,SL5", "formats"))) == {
        "SL201",
        "SL205",
        "SL206",
        "SL501",
    }
    assert "SL303" not in codes_in(lint("--output-format", "json", "--ignore", "SL3", "formats"))
    assert (
        codes_in(lint("--output-format", "json", "--select", "SL3", "--ignore", "SL303", "formats"))
        == []
    )


def test_signature_options(tmp_path):
    path = write(
        tmp_path / "vtv.c",
        "#section support_code_apply\n"
        "int APPLY_SPECIFIC(vtv)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) {\n"
        "    DTYPE_INPUT_2* w = 0; return 0;\n}\n",
    )
    signature = [
        "--inputs",
        "float64[:],float64[:]",
        "--outputs",
        "float64[:]",
        "--func-name",
        "APPLY_SPECIFIC(vtv)",
    ]
    assert codes_in(lint("--output-format", "json", *signature, path)) == ["SL601"]
    assert codes_in(lint("--output-format", "json", *signature, "--params", "k:int64", path)) == [
        "SL603",
        "SL601",
    ]
    assert codes_in(
        lint("--output-format", "json", *signature[:4], "--func-name", "other", path)
    ) == ["SL602", "SL601"]


def test_a_thousand_files_lint_in_one_run(tmp_path):
    # Each file is reported as it would be alone (how fast is bench/bench_parse.py's question).
    fixtures = sorted((LINT_DIR / "fixtures").glob("*.c"))
    for i in range(1000):
        source = fixtures[i % len(fixtures)]
        shutil.copy(source, tmp_path / f"{i:04d}_{source.name}")

    def reported(output: str) -> dict[str, list[str]]:
        """Each file's diagnostics, its path in them written FILE."""
        found: dict[str, list[str]] = {}
        for line in output.splitlines():
            path, _, rest = line.partition(":")
            if path.endswith(".c"):
                found.setdefault(Path(path).name, []).append(rest.replace(path, "FILE"))
        return found

    result = lint("--output-format", "concise", tmp_path)
    assert result.returncode == 1
    together = reported(result.stdout)
    for source in fixtures:
        alone = reported(lint("--output-format", "concise", source).stdout).get(source.name, [])
        for i in range(fixtures.index(source), 1000, len(fixtures)):
            assert together.get(f"{i:04d}_{source.name}", []) == alone, source.name


def test_the_example_ops_lint_clean():
    result = lint(ROOT / "ops")
    assert result.returncode == 0, result.stdout


def test_extra_sections_accepts_a_base_class_tag(tmp_path):
    op = write(
        tmp_path / "kernels.c",
        "#section kernels\n#kernel k : * :\n\n#section support_code\nint x;\n",
    )
    refused = lint(op)
    assert refused.returncode == 1 and "[SL201]" in refused.stdout
    accepted = lint("--extra-sections", "kernels", op)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    bad = lint("--extra-sections", "ker nels", op)
    assert bad.returncode == 2 and "`ker nels` is not a section tag" in bad.stderr


# ---- ruff's conventions: settings files, --fix/--diff, colour, stdin, statistics, quiet --------

RETURN_IN_CODE = "#section code\nreturn 1;\n"  # SL501, an error


def test_pyproject_settings_apply_to_files_below(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.section-lint]\n'
        '# the op returns on purpose\nignore = ["SL501"]\n',
    )
    bad = write(tmp_path / "ops" / "deep" / "bad.c", RETURN_IN_CODE)
    assert lint(bad).returncode == 0
    assert lint("--isolated", bad).returncode == 1


def test_section_lint_toml_wins_over_pyproject_and_the_nearest_wins(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.section-lint]\nignore = ["SL501"]\n')
    write(tmp_path / "section-lint.toml", 'select = ["SL1"]\n')
    bad = write(tmp_path / "bad.c", RETURN_IN_CODE)
    assert lint(bad).returncode == 0  # only SL1 selected
    write(tmp_path / "sub" / "section-lint.toml", 'extend-select = ["SL5"]\n')
    nested = write(tmp_path / "sub" / "bad.c", RETURN_IN_CODE)
    result = lint(nested)
    assert result.returncode == 1 and "[SL501]" in result.stdout


def test_select_and_extend_select(tmp_path):
    write(
        tmp_path / "section-lint.toml",
        'select = [\n  "SL1",  # markers\n]\nextend-select = ["SL5"]\n',
    )
    result = lint(write(tmp_path / "bad.c", RETURN_IN_CODE))
    assert result.returncode == 1 and "[SL501]" in result.stdout
    assert lint("--select", "SL1", tmp_path / "bad.c").returncode == 1, "extend-select still adds"


def test_per_file_ignores_and_extra_sections(tmp_path):
    write(
        tmp_path / "section-lint.toml",
        'extra-sections = ["kernels"]\n\n[per-file-ignores]\n"legacy/*.c" = ["SL5"]\n',
    )
    assert lint(write(tmp_path / "legacy" / "old.c", RETURN_IN_CODE)).returncode == 0
    assert lint(write(tmp_path / "new" / "bad.c", RETURN_IN_CODE)).returncode == 1
    kernels = write(
        tmp_path / "k.c", "#section kernels\nanything\n#section support_code\nint f(void);\n"
    )
    assert lint(kernels).returncode == 0


@pytest.mark.parametrize(
    "text, message",
    [
        ('select = "SL1"\n', "section-lint.toml:1:10: `select` must be an array of strings"),
        ('\nselect = ["SL1"\n', "section-lint.toml:2:17: Error while parsing array"),
        ('selct = ["SL1"]\n', "section-lint.toml:1:1: unknown setting `selct`"),
        ('select = ["SL8"]\n', "section-lint.toml: `SL8` is not a rule code"),
    ],
)
def test_bad_settings_name_the_file_and_line(tmp_path, text, message):
    write(tmp_path / "section-lint.toml", text)
    result = lint(write(tmp_path / "a.c", RETURN_IN_CODE))
    assert result.returncode == 2
    assert message in result.stderr, result.stderr


def test_other_tables_of_pyproject_are_not_read(tmp_path):
    write(
        tmp_path / "pyproject.toml", '[tool.other]\nlist = [\n  ["a", "b"],\n]\ns = """\n[x]\n"""\n'
    )
    assert lint(write(tmp_path / "bad.c", RETURN_IN_CODE)).returncode == 1


def test_fix_applies_only_safe_fixes(tmp_path):
    # A byte order mark (safe to remove) and a misspelt tag (the fix guesses: unsafe).
    path = write(tmp_path / "op.c", "\ufeff#section suport_code_apply\nint APPLY_SPECIFIC(x);\n")
    diff = lint("--diff", path)
    assert diff.returncode == 1
    assert diff.stdout.startswith(f"--- {path}\n+++ {path}\n@@ -1,2 +1,2 @@\n")
    assert "-\ufeff#section suport_code_apply\n+#section suport_code_apply\n" in diff.stdout
    assert path.read_text(encoding="utf-8").startswith("\ufeff"), "--diff writes nothing"
    fixed = lint("--fix", path)
    assert (
        path.read_text(encoding="utf-8") == "#section suport_code_apply\nint APPLY_SPECIFIC(x);\n"
    )
    assert fixed.returncode == 1 and "[SL201]" in fixed.stdout and "Fixed 1 finding" in fixed.stdout
    assert lint("--diff", path).returncode == 0  # nothing safe is left


def test_json_marks_fix_applicability_and_links_absolutely():
    records = json.loads(lint("--output-format", "json", "formats").stdout)
    assert {r["fix"]["applicability"] for r in records if r["fix"]} <= {"safe", "unsafe"}
    assert all(re.match(r"^https://[^ ]+/README\.md#sl\d{3}$", r["url"]) for r in records)
    sarif = json.loads(lint("--output-format", "sarif", "formats").stdout)
    assert all(
        r["helpUri"].startswith("https://") for r in sarif["runs"][0]["tool"]["driver"]["rules"]
    )


def test_color_always_never_auto_and_no_color(tmp_path):
    import pty

    bad = write(tmp_path / "bad.c", RETURN_IN_CODE)
    assert "\x1b[01;31merror:\x1b[m" in lint("--color", "always", bad).stdout
    assert "\x1b[" not in lint("--color", "never", bad).stdout
    assert "\x1b[" not in lint(bad).stdout, "auto: not a terminal"

    def on_terminal(env):
        leader, follower = pty.openpty()
        subprocess.run([SECTION_LINT, str(bad)], stdout=follower, env=env, check=False)
        os.close(follower)
        out = os.read(leader, 65536).decode()
        os.close(leader)
        return out

    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert "\x1b[01;31merror:" in on_terminal(env)
    assert "\x1b[" not in on_terminal({**env, "NO_COLOR": "1"})


def test_stdin_with_a_file_name(tmp_path):
    write(tmp_path / "sub" / "section-lint.toml", 'ignore = ["SL501"]\n')
    result = subprocess.run(
        [SECTION_LINT, "--stdin-filename", "ops/x.c", "-"],
        input=RETURN_IN_CODE,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 1 and result.stdout.startswith("ops/x.c:2:1: error:")
    quiet = subprocess.run(
        [SECTION_LINT, "--stdin-filename", "sub/x.c", "-"],
        input=RETURN_IN_CODE,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert quiet.returncode == 0, "settings are found from the stdin file name"


def test_statistics_and_quiet(tmp_path):
    stats = lint("--statistics", "formats")
    assert stats.returncode == 1
    rows = [line.split("\t") for line in stats.stdout.splitlines()]
    assert rows and all(len(r) == 3 and re.match(r"^SL\d{3}$", r[1]) for r in rows)
    counts = [int(r[0]) for r in rows]
    assert counts == sorted(counts, reverse=True)
    assert sum(counts) == len(json.loads(lint("--output-format", "json", "formats").stdout))
    bad = write(tmp_path / "bad.c", RETURN_IN_CODE)
    assert "Found" in lint(bad).stdout and "Found" not in lint("-q", bad).stdout


def test_a_missing_path_warns_and_exits_2(tmp_path):
    clean = write(tmp_path / "clean.c", "#section support_code\nint helper(void) { return 0; }\n")
    result = lint("--select", "SL101", tmp_path / "missing.c", clean)
    assert result.returncode == 2
    assert "missing.c: no such file or folder" in result.stderr


def test_an_ignore_file_comment_before_the_first_marker_is_fixed_by_moving_it(tmp_path):
    # PyTensor rejects any text before the first marker, comments included, so this stays SL202;
    # the safe fix moves the comment below the marker, where it still applies to the whole file.
    path = write(
        tmp_path / "op.c", "// section-lint: ignore-file[SL501]\n#section code\nreturn 1;\n"
    )
    first = lint(path)
    assert "[SL202]" in first.stdout and "fix: move the comment below" in first.stdout
    assert lint("--fix", path).returncode == 0
    assert path.read_text() == "#section code\n// section-lint: ignore-file[SL501]\nreturn 1;\n"


def test_version():
    result = lint("--version")
    assert result.returncode == 0 and result.stdout.startswith("section-lint ")


def test_per_op_signatures_in_settings(tmp_path):
    vtv = (
        "#section support_code_apply\n"
        "int APPLY_SPECIFIC(vtv)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) {\n"
        "    DTYPE_INPUT_2* w = 0; return 0;\n}\n"
    )
    write(
        tmp_path / "pyproject.toml",
        '[tool.section-lint.signatures."ops/vtv/*.c"]\ninputs = "float64[:],float64[:]"\n'
        'outputs = "float64[:]"\nfunc-name = "APPLY_SPECIFIC(vtv)"\n\n'
        '[tool.section-lint.signatures."ops/other/*.c"]  # a comment\nfunc-name = "other"\n',
    )
    assert codes_in(lint("--output-format", "json", write(tmp_path / "ops/vtv/vtv.c", vtv))) == [
        "SL601"
    ]
    assert codes_in(lint("--output-format", "json", write(tmp_path / "ops/other/o.c", vtv))) == [
        "SL602"
    ]
    assert codes_in(lint("--output-format", "json", write(tmp_path / "ops/none/n.c", vtv))) == []
    # The command line wins over the settings, part by part.
    assert codes_in(
        lint("--output-format", "json", "--func-name", "other", tmp_path / "ops/vtv/vtv.c")
    ) == ["SL602", "SL601"]
    write(
        tmp_path / "pyproject.toml", '[tool.section-lint.signatures."*.c"]\ninputs = "float64["\n'
    )
    bad = lint(tmp_path / "ops/vtv/vtv.c")
    assert bad.returncode == 2 and "pyproject.toml: signatures:" in bad.stderr, bad.stderr
