#section support_code_apply

// c * sum_i |x_i|**n + sum_i pow(x_i, 2): an integer input n, integer loop counters, fabs and
// pow of the values.
int APPLY_SPECIFIC(power_sum)(PyArrayObject* x, DTYPE_INPUT_1 n, DTYPE_INPUT_2 c,
                              PyArrayObject** out)
{
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "power_sum: n must not be negative");
        return 1;
    }
    DTYPE_OUTPUT_0 total = 0.0;
    DTYPE_OUTPUT_0 squares = 0;
    npy_intp size = PyArray_DIMS(x)[0];
    for (npy_intp i = 0; i < size; ++i) {
        DTYPE_INPUT_0 v = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        DTYPE_INPUT_0 term = 1;
        for (npy_int64 k = 0; k < n; ++k) term *= fabs(v);
        total += term;
        squares += pow(v, 2);
    }
    if (NULL == *out) {
        *out = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *out) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*out) = c * total + squares;
    return 0;
}
