#section code

// z = x * x, written directly as the body of c_code: no function name, the inputs and outputs
// are INPUT_0 and OUTPUT_0, and errors jump out through FAIL.
{
    npy_intp n = PyArray_DIMS(INPUT_0)[0];
    if (NULL == OUTPUT_0 || PyArray_DIMS(OUTPUT_0)[0] != n) {
        Py_XDECREF(OUTPUT_0);
        OUTPUT_0 = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(INPUT_0), TYPENUM_OUTPUT_0, 0);
        if (NULL == OUTPUT_0) {
            PyErr_SetString(PyExc_MemoryError, "square: cannot allocate the output");
            FAIL;
        }
    }
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 v = *(DTYPE_INPUT_0*)PyArray_GETPTR1(INPUT_0, i);
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(OUTPUT_0, i) = v * v;
    }
}
