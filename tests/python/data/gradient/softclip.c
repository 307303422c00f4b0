#section support_code_apply

// softplus(v) = log(1 + exp(v)), branching on the value as numerical code does.
static DTYPE_OUTPUT_0 APPLY_SPECIFIC(softplus)(DTYPE_INPUT_0 v)
{
    if (v > 30.0) return v;
    if (v < -30.0) return exp(v);
    return log1p(exp(v));
}

#section code

// y_i = softplus(x_i) / 2 + x_i**2 / 4 up to the first |x_i| over `limit` (the rest 0), and
// their mean times `limit`: a `code` section, two outputs (an array and a number), an early
// exit, a branch on values and a helper of DTYPE values.
{
    npy_intp n = PyArray_DIMS(INPUT_0)[0];
    DTYPE_INPUT_1 limit = INPUT_1;
    if (NULL == OUTPUT_0 || PyArray_DIMS(OUTPUT_0)[0] != n) {
        Py_XDECREF(OUTPUT_0);
        OUTPUT_0 = (PyArrayObject*)PyArray_ZEROS(1, PyArray_DIMS(INPUT_0), TYPENUM_OUTPUT_0, 0);
        if (NULL == OUTPUT_0) FAIL;
    } else {
        for (npy_intp i = 0; i < n; ++i) *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(OUTPUT_0, i) = 0.0;
    }
    DTYPE_OUTPUT_1 total = 0;
    int counted = 0;
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 v = *(DTYPE_INPUT_0*)PyArray_GETPTR1(INPUT_0, i);
        if (fabs(v) > limit) break;
        DTYPE_OUTPUT_0 y = APPLY_SPECIFIC(softplus)(v) * 0.5 + pow(v, 2) / 4.0;
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(OUTPUT_0, i) = y;
        total += y;
        ++counted;
    }
    OUTPUT_1 = limit * total / (counted > 0 ? counted : 1);
}
