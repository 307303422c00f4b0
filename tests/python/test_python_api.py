"""The public Python API as users meet it: reprs, the structured load error, any iterable of
paths, and `ndim` for `output_types`."""

from __future__ import annotations

import pytest
from examples import OPS_DIR, load_op_module

from libsection import LoadError, load_sections, ndim, parse_text


def test_an_op_repr_names_its_files_function_and_params():
    op = load_op_module("vector_times_vector").VectorTimesVector()
    text = repr(op)
    assert text.startswith("VectorTimesVector(func_files=[")
    assert (
        "vectorTimesVector.c" in text and "func_name='APPLY_SPECIFIC(vector_times_vector)'" in text
    )


def test_loaded_sections_repr():
    assert repr(parse_text("#section code\nx;\n#section support_code\nint y;\n", "a.c")) == (
        "<LoadedSections files=['a.c'] sections=['code', 'support_code'] diagnostics=0>"
    )
    bad = repr(parse_text("#section foo\n", "b.c"))
    assert bad.startswith("<LoadedSections files=['b.c'] sections=[] error='Unknown section type")


def test_parse_error_is_structured_and_still_a_tuple():
    error = parse_text("#section foo\n", "b.c").error
    assert isinstance(error, LoadError)
    assert (error.errno, error.path) == (0, "")
    assert error.message == "Unknown section type (in file b.c): foo"
    errno, message, path = error
    assert message == error.message and error == (0, message, "")
    assert parse_text("#section code\n").error is None


def test_load_sections_takes_any_iterable_of_paths():
    files = sorted((OPS_DIR / "vector_times_vector").glob("*.c"))
    expected = load_sections([str(f) for f in files])
    assert load_sections(tuple(files)) == expected
    assert load_sections(f for f in files) == expected
    assert load_sections(files[0]) == load_sections(str(files[0]))


def test_ndim():
    assert [ndim(t) for t in ("float64[:]", "float32[:,:]", "float64[]", "int64")] == [1, 2, 0, 0]
    with pytest.raises(ValueError):
        ndim("float64[")


def test_the_errors_users_catch_have_their_public_names(tmp_path, cache_dir):
    """`libsection.CompileError` (and LinkError, SectionError, SectionDecodeError) is the class
    a build raises, and a traceback names it so, as NumPy and pydantic present theirs."""
    import traceback

    import libsection

    broken = tmp_path / "broken.c"
    broken.write_text("#section code\nundeclared_name;\n")
    with pytest.raises(libsection.CompileError) as compile_error:
        libsection.build([broken], inputs=["float64"], outputs=["float64"])
    no_code = _write(tmp_path / "no_code.c", b"#section support_code\nint a;\n")
    with pytest.raises(libsection.LinkError) as link_error:  # no `code`, no func_name
        libsection.build([no_code], inputs=["float64"], outputs=["float64"])
    with pytest.raises(libsection.SectionError) as section_error:
        libsection.load([_write(tmp_path / "typo.c", b"#section suport_code\n")])
    with pytest.raises(libsection.SectionDecodeError) as decode_error:
        libsection.load([_write(tmp_path / "latin1.c", b"#section code\n\xe9;\n")])
    for caught in (compile_error, link_error, section_error, decode_error):
        cls = caught.type
        assert cls.__module__ == "libsection" and getattr(libsection, cls.__name__) is cls
        shown = traceback.format_exception_only(caught.value)[-1]
        assert shown.startswith(f"libsection.{cls.__name__}: "), shown


def _write(path, data: bytes):
    path.write_bytes(data)
    return path
