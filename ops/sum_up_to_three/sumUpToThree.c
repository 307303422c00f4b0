#section support_code_apply

// z = x + y (+ w): the op is declared with _cop_num_inputs = 3, so when it is applied to two
// inputs the generated call passes NULL for the third.
int APPLY_SPECIFIC(sum_up_to_three)(PyArrayObject* x, PyArrayObject* y, PyArrayObject* w,
                                    PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (PyArray_DIMS(y)[0] != n || (NULL != w && PyArray_DIMS(w)[0] != n)) {
        PyErr_SetString(PyExc_ValueError, "sum_up_to_three: inputs must have the same length");
        return 1;
    }
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    for (npy_intp i = 0; i < n; ++i) {
        double v = *(double*)PyArray_GETPTR1(x, i) + *(double*)PyArray_GETPTR1(y, i);
        if (NULL != w) v += *(double*)PyArray_GETPTR1(w, i);
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = v;
    }
    return 0;
}
