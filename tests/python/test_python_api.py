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
