#section support_code_apply

/* z = k x for a vector x and a 0-d array k (an array, as the C code takes it). */
int APPLY_SPECIFIC(scale_row)(PyArrayObject* x, PyArrayObject* k, PyArrayObject** z) {
    npy_intp const n = PyArray_DIMS(x)[0];
    DTYPE_INPUT_1 const factor = *(DTYPE_INPUT_1*)PyArray_DATA(k);
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
    if (NULL == *z) return 1;
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = factor * *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
    return 0;
}
