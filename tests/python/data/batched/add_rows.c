#section support_code_apply

/* z = x + y for two vectors of one length n, as its gufunc_signature "(n),(n)->(n)" says: the
   code trusts the signature and reads n elements of y, as C code behind a gufunc may. */
int APPLY_SPECIFIC(add_rows)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) {
    npy_intp const n = PyArray_DIMS(x)[0];
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
    if (NULL == *z) return 1;
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) =
            *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i) + ((DTYPE_INPUT_1*)PyArray_DATA(y))[i];
    return 0;
}
