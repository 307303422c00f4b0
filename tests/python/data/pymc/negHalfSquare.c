#section support_code_apply

// z[i] = -x[i]^2 / 2: a standard normal's log-density up to its constant, elementwise.
int APPLY_SPECIFIC(neg_half_square)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 v = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = -0.5 * v * v;
    }
    return 0;
}
