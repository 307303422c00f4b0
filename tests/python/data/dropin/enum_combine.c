#section support_code_apply
// z = x + y or x * y, chosen by an EnumList param.
int APPLY_SPECIFIC(combine)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z, int how)
{
    npy_intp n = PyArray_DIMS(x)[0];
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);
    if (*z == NULL) return 1;
    for (npy_intp i = 0; i < n; ++i) {
        npy_float64 a = *(npy_float64*)PyArray_GETPTR1(x, i), b = *(npy_float64*)PyArray_GETPTR1(y, i);
        *(npy_float64*)PyArray_GETPTR1(*z, i) = how == COMBINE_ADD ? a + b : a * b;
    }
    return 0;
}
