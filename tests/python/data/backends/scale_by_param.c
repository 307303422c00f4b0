#section support_code_apply
// z = k * x, k the op's params: a scalar params type (not a ParamsType), any dtype.
int APPLY_SPECIFIC(scale_by_param)(PyArrayObject* x, PyArrayObject** z, double k)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (*z == NULL || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);
        if (*z == NULL) return 1;
    }
    for (npy_intp i = 0; i < n; ++i)
        ((double*)PyArray_DATA(*z))[i] = (double)k * *(double*)PyArray_GETPTR1(x, i);
    return 0;
}
