#section code

// Doubles a vector; written as a `code` section (no function name), so INPUT_0, OUTPUT_0 and
// FAIL come from the expander's macros.
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(INPUT_0), TYPENUM_OUTPUT_0, 0);
if (!OUTPUT_0) FAIL;
for (npy_intp i = 0; i < PyArray_DIMS(INPUT_0)[0]; ++i) {
    *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(OUTPUT_0, i) =
        2 * *(DTYPE_INPUT_0*)PyArray_GETPTR1(INPUT_0, i);
}
