#section support_code_apply
// z = x + y, or x + 100 when y is NULL (the op's format_c_function_args may pass NULL).
int APPLY_SPECIFIC(maybe_add)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);
    if (*z == NULL) return 1;
    for (npy_intp i = 0; i < n; ++i)
        *(npy_float64*)PyArray_GETPTR1(*z, i) = *(npy_float64*)PyArray_GETPTR1(x, i) +
            (y == NULL ? 100.0 : *(npy_float64*)PyArray_GETPTR1(y, i));
    return 0;
}
