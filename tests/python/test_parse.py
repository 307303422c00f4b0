"""The parser as Python sees it: parse_text, load_sections, SectionError, the main-job command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import libsection

ROOT = Path(__file__).resolve().parents[2]


def test_parse_text_returns_sections_blocks_and_diagnostics():
    result = libsection.parse_text("#section support_code\nint a;\n#section code\nx;\n", "op.c")
    assert result.sections == {"support_code": "\nint a;\n", "code": "\nx;\n"}
    assert [(b["tag"], b["line"], b["body_line"]) for b in result.blocks] == [
        ("support_code", 1, 2),
        ("code", 3, 4),
    ]
    assert result.error is None
    assert result.diagnostics == []


def test_parse_text_reports_a_misspelled_tag_with_location_and_fix():
    result = libsection.parse_text("#section support_code\nx\n#section code_cleanp\n", "op.c")
    (diagnostic,) = result.diagnostics
    assert (diagnostic.code, diagnostic.severity) == ("SL201", "error")
    assert (diagnostic.filename, diagnostic.line, diagnostic.column) == ("op.c", 3, 10)
    assert diagnostic.replacement == "code_cleanup"
    assert "op.c:3:10: error: Unknown section type (in file op.c): code_cleanp [SL201]" in str(
        diagnostic
    )


def test_section_error_is_a_value_error_starting_with_the_reference_message(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("int x;\n#section code\ny\n")
    with pytest.raises(ValueError) as raised:
        libsection.load_sections([bad])
    assert isinstance(raised.value, libsection.SectionError)
    assert str(raised.value).startswith(
        f"Stray code before first #section statement (in file {bad}): int x;\n"
    )
    assert f"{bad}:1:1: error:" in str(raised.value)
    assert [d.code for d in raised.value.diagnostics] == ["SL202"]


def test_missing_file_raises_file_not_found_naming_the_path(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        libsection.load_sections(str(tmp_path / "missing.c"))
    assert raised.value.filename == str(tmp_path / "missing.c")


def test_invalid_utf8_raises_naming_the_byte_offset(tmp_path):
    bad = tmp_path / "latin1.c"
    bad.write_bytes(b"#section code\nint caf\xe9;\n")
    with pytest.raises(libsection.SectionError, match="byte 0xe9 at byte offset 21"):
        libsection.load_sections([bad])


def test_a_200_mb_file_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("LIBSECTION_MAX_FILE_BYTES", str(256 << 20))  # over the 64 MiB default
    big = tmp_path / "big.c"
    line = b"int a_rather_ordinary_line_of_c_code = 42;\n"
    with big.open("wb") as f:
        f.write(b"#section support_code\n")
        f.write(line * (200 * 2**20 // len(line)))
        f.write(b"#section code\nx;\n")
    loaded = libsection.load(big)
    assert loaded.sections["code"] == "\nx;\n"
    markers = len(b"#section support_code") + len(b"#section code\nx;\n")
    assert len(loaded.sections["support_code"]) == big.stat().st_size - markers


def test_main_job_prints_sections_with_locations(tmp_path):
    op = tmp_path / "myop"
    op.mkdir()
    (op / "a.c").write_text("#section support_code\nint a;\n#section suport_code_apply\n")
    out = subprocess.run(
        [sys.executable, "-m", "libsection", "show", str(tmp_path)], capture_output=True, text=True
    )
    assert out.returncode == 1
    assert f"{op / 'a.c'}:1:1: #section support_code" in out.stdout
    assert "did you mean `support_code_apply`?" in out.stdout
