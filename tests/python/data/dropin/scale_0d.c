#section support_code_apply
// z = x * k, k a 0-d tensor; fails on a negative factor.
int APPLY_SPECIFIC(scale)(PyArrayObject* x, PyArrayObject* k, PyArrayObject** z)
{
    npy_float64 factor = *(DTYPE_INPUT_1*)PyArray_DATA(k);
    if (factor < 0) {
        PyErr_Format(PyExc_ValueError, "scale_0d: negative factor %d", (int)factor);
        return 1;
    }
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
    if (*z == NULL) return 1;
    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i) * factor;
    return 0;
}
