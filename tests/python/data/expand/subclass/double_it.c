#section code

// Triples a vector: the copy of double_it.c that a subclass declared in this directory loads.
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(INPUT_0), TYPENUM_OUTPUT_0, 0);
if (!OUTPUT_0) FAIL;
for (npy_intp i = 0; i < PyArray_DIMS(INPUT_0)[0]; ++i) {
    *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(OUTPUT_0, i) =
        3 * *(DTYPE_INPUT_0*)PyArray_GETPTR1(INPUT_0, i);
}
