"""What a standalone op's C code returns is checked against what the op declares: an output of
another dtype or rank (or not an array at all) is a TypeError naming the op, the output and
both types, and nothing of that call is kept or returned."""

from __future__ import annotations

import numpy as np
import pytest

import libsection

# Allocates its output as MODE says: the declared float64[:], an int8[:,:,:], an int64 array
# under NumPy's other name for it (NPY_LONGLONG), or nothing (a NULL output).
SOURCE = """
#section support_code_apply
int APPLY_SPECIFIC(shaped)(PyArrayObject* x, PyArrayObject** z) {
    npy_intp n = PyArray_DIMS(x)[0];
    npy_intp cube[3] = {1, 2, 2};
    Py_XDECREF(*z);
    *z = NULL;
    switch (MODE) {
        case 0: *z = (PyArrayObject*)PyArray_ZEROS(1, &n, NPY_FLOAT64, 0); break;
        case 1: *z = (PyArrayObject*)PyArray_ZEROS(3, cube, NPY_INT8, 0); break;
        case 2: *z = (PyArrayObject*)PyArray_ZEROS(1, &n, NPY_LONGLONG, 0); break;
        default: return 0;
    }
    return *z ? 0 : 1;
}
"""


def shaped_op(tmp_path, mode, output):
    path = tmp_path / f"shaped{mode}.c"
    path.write_text(SOURCE.replace("MODE", str(mode)))

    class Shaped(libsection.ExternalCOp):
        func_files = [path]
        func_name = "APPLY_SPECIFIC(shaped)"

        def output_types(self, x):
            return [output]

    return Shaped()


def test_the_declared_output_is_returned(tmp_path, cache_dir):
    out = shaped_op(tmp_path, 0, "float64[:]")(np.ones(3))
    assert out.dtype == np.float64 and out.shape == (3,)


def test_another_dtype_and_rank_is_a_type_error_naming_both(tmp_path, cache_dir):
    op = shaped_op(tmp_path, 1, "float64[:]")
    with pytest.raises(TypeError, match=r"Shaped.*output 0 is a int8\[:,:,:\] array.*float64\[:\]"):
        op(np.ones(3))
    with pytest.raises(TypeError):  # every call, not only the first
        op(np.ones(3))


def test_no_array_at_all_is_a_type_error(tmp_path, cache_dir):
    with pytest.raises(
        TypeError, match=r"output 0 is a NoneType, but the op declares float64\[:\]"
    ):
        shaped_op(tmp_path, 3, "float64[:]")(np.ones(3))


def test_numpys_other_name_of_a_dtype_passes(tmp_path, cache_dir):
    out = shaped_op(tmp_path, 2, "int64[:]")(np.ones(3))
    assert out.dtype == np.int64 and out.shape == (3,)


def test_the_raw_build_object_checks_too(tmp_path, cache_dir):
    path = tmp_path / "shaped1.c"
    path.write_text(SOURCE.replace("MODE", "1"))
    compiled = libsection.build(
        [path], "APPLY_SPECIFIC(shaped)", inputs=["float64[:]"], outputs=["float64[:]"]
    )
    with pytest.raises(TypeError, match=r"output 0 is a int8\[:,:,:\] array"):
        compiled(np.ones(3))
