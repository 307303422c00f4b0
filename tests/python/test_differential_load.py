"""libsection's loader against the installed PyTensor's ExternalCOp on the same files.

For every case: identical ``code_sections`` dicts, or the same exception class with the
reference's message as the prefix of ours.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import libsection

pytensor_op = pytest.importorskip("pytensor.link.c.op")


class _ReferenceOp(pytensor_op.ExternalCOp):
    """The smallest instantiable ExternalCOp: only its loader is exercised."""

    def make_node(self, *inputs):
        raise NotImplementedError

    def perform(self, node, inputs, outputs):
        raise NotImplementedError


def reference_load(paths: list[Path]):
    try:
        return _ReferenceOp([str(p) for p in paths]).code_sections
    except Exception as error:  # the reference's exception is the expected outcome
        return error


def libsection_load(paths: list[Path]):
    try:
        return libsection.load_sections([str(p) for p in paths])
    except Exception as error:
        return error


def assert_same_outcome(paths: list[Path]) -> None:
    expected, actual = reference_load(paths), libsection_load(paths)
    if isinstance(expected, BaseException):
        assert isinstance(actual, type(expected)), (expected, actual)
        if isinstance(expected, OSError):
            assert (actual.errno, actual.filename) == (expected.errno, expected.filename)
        else:
            assert str(actual).startswith(str(expected)), (str(expected), str(actual))
    else:
        assert not isinstance(actual, BaseException), (expected, actual)
        assert list(actual.items()) == list(expected.items())


def write(tmp_path: Path, files: list[bytes]) -> list[Path]:
    paths = []
    for i, content in enumerate(files):
        path = tmp_path / f"f{i}.c"
        path.write_bytes(content)
        paths.append(path)
    return paths


EDGE_CASES = {
    "simple": [b"#section support_code\nint y;\n#section code\nx;\n"],
    "marker_on_last_line": [b"#section support_code\nint y;\n#section code"],
    "crlf": [b"#section support_code\r\nint y;\r\n#section code\r\nx;\r\n"],
    "lone_cr": [b"#section support_code\rint y;\r#section code\rx;"],
    "crlf_across_files": [
        b"#section support_code\r\nint y;\r\n",
        b"#section support_code\nint y;\n",
    ],
    "bom_one_marker": [b"\xef\xbb\xbf#section support_code\nint y;\n"],
    "bom_two_markers": [b"\xef\xbb\xbf#section support_code\nint y;\n#section code\nx;\n"],
    "stray_text": [b"int x;\n#section support_code\nint y;\n"],
    "whitespace_prelude": [b"\n  \n\t\n#section support_code\nint y;"],
    "unicode_whitespace_prelude": ["\u00a0\u2003\n#section code\nx\n".encode()],
    "unknown_tag": [b"#section support_code\nint y;\n#section suport_code\nz;\n"],
    "empty_file": [b""],
    "no_marker": [b"int x;\n"],
    "legacy_markers": [
        b"junk\nPYTENSOR_SUPPORT_CODE_SECTION\nint s;\nPYTENSOR_APPLY_CODE_SECTION\n"
        b"int a;\nPYTENSOR_SUPPORT_CODE_SECTION\nint s2;\n"
    ],
    "legacy_across_files": [
        b"PYTENSOR_SUPPORT_CODE_SECTION\na\n",
        b"PYTENSOR_SUPPORT_CODE_SECTION\nb\n",
    ],
    "mixed_in_one_file": [b"#section code\nx\nPYTENSOR_APPLY_CODE_SECTION\ny\n"],
    "mixed_across_files": [b"#section code\nx\n", b"PYTENSOR_APPLY_CODE_SECTION\ny\n"],
    "several_files": [
        b"#section support_code\na\n",
        b"#section code\nb\n",
        b"#section init_code\nc\n",
    ],
    "repeated_tags": [
        b"#section support_code\na\n#section code\nb\n#section support_code\nc\n",
        b"#section code\nd\n",
    ],
    "near_miss_lines": [
        b"#section support_code\na\n #section code\n#section  code\n#section code \n"
        b"# section code\n#section\tcode\n#section code-x\n"
    ],
    "near_miss_before_first": [b"#section code \n#section code\nx\n"],
    "all_nine_tags": [
        b"".join(
            b"#section %s\n/* %s */\n" % (t, t)
            for t in [
                b"init_code",
                b"init_code_apply",
                b"init_code_struct",
                b"support_code",
                b"support_code_apply",
                b"support_code_struct",
                b"cleanup_code_struct",
                b"code",
                b"code_cleanup",
            ]
        )
    ],
    "non_ascii_text": ["#section code\n/* caf\u00e9 \u2014 \U0001f600 */\n".encode()],
    "unknown_after_stray_file": [b"#section code\nx\n", b"#section nope\ny\n"],
}


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_edge_case_matches_pytensor(tmp_path, name):
    assert_same_outcome(write(tmp_path, EDGE_CASES[name]))


def test_missing_file_matches_pytensor(tmp_path):
    assert_same_outcome([tmp_path / "missing.c"])


def test_empty_file_list_matches_pytensor():
    assert_same_outcome([])


def test_every_ops_file_matches_pytensor():
    root = Path(__file__).resolve().parents[2] / "ops"
    folders = sorted({p.parent for p in root.rglob("*.c")})
    assert folders, "ops/ has no section files"
    for folder in folders:
        assert_same_outcome(sorted(folder.glob("*.c")))


# Pieces a random section file is built from: real markers, near misses, C text, odd whitespace.
PIECES = [
    b"#section support_code",
    b"#section code",
    b"#section code_cleanup",
    b"#section init_code_struct",
    b"#section support_code_apply",
    b"#section bogus",
    b"#section",
    b" #section code",
    b"#section code ",
    b"# section code",
    b"#section\tcode",
    b"PYTENSOR_APPLY_CODE_SECTION",
    b"PYTENSOR_SUPPORT_CODE_SECTION",
    b"int x = 1;",
    b"",
    b"  ",
    b"\t",
    "caf\u00e9".encode(),
    b"/* #section code */",
    b"\x0c",
    "\u2028".encode(),
]
NEWLINES = [b"\n", b"\n", b"\n", b"\r\n", b"\r"]


@pytest.mark.parametrize("seed", range(300))
def test_random_file_matches_pytensor(tmp_path, seed):
    rng = random.Random(seed)
    files = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        lines = [rng.choice(PIECES) + rng.choice(NEWLINES) for _ in range(rng.randrange(0, 9))]
        files.append(b"".join(lines)[: None if rng.random() < 0.8 else -1])
    assert_same_outcome(write(tmp_path, files))


def test_older_legacy_prefixes_load_where_pytensor_refuses_them(tmp_path):
    """A deliberate difference: Theano- and Aesara-era files load unchanged in libsection."""
    (path,) = write(tmp_path, [b"THEANO_APPLY_CODE_SECTION\nint a;\n"])
    assert isinstance(reference_load([path]), ValueError)
    assert libsection_load([path]) == {"support_code_apply": "\nint a;\n"}
