#section support_code_apply
// z = x + SHIFT; SHIFT comes from the op's own get_c_macros.
int APPLY_SPECIFIC(shift)(PyArrayObject* x, PyArrayObject** z)
{
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);
    if (*z == NULL) return 1;
    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i)
        *(npy_float64*)PyArray_GETPTR1(*z, i) = *(npy_float64*)PyArray_GETPTR1(x, i) + SHIFT;
    return 0;
}
