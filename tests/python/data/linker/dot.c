#section support_code_apply
// A scalar output: the dot product of two vectors.
int APPLY_SPECIFIC(dot)(PyArrayObject* x, PyArrayObject* y, DTYPE_OUTPUT_0* out)
{
    if (PyArray_DIMS(x)[0] != PyArray_DIMS(y)[0]) {
        PyErr_SetString(PyExc_ValueError, "dot: lengths differ");
        return 1;
    }
    DTYPE_OUTPUT_0 total = 0;
    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i)
        total += *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i) * *(DTYPE_INPUT_1*)PyArray_GETPTR1(y, i);
    *out = total;
    return 0;
}
