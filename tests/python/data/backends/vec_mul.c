#section support_code_apply
// z = x * y elementwise, for vectors of the same length; z's memory is reused when it fits.
int APPLY_SPECIFIC(vec_mul)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (PyArray_DIMS(y)[0] != n) {
        PyErr_Format(PyExc_ValueError, "vec_mul: lengths differ (%ld and %ld)",
                     (long)n, (long)PyArray_DIMS(y)[0]);
        return 1;
    }
    if (*z == NULL || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (*z == NULL) return 1;
    }
    char *px = PyArray_BYTES(x), *py = PyArray_BYTES(y);
    npy_intp sx = PyArray_STRIDES(x)[0], sy = PyArray_STRIDES(y)[0];
    DTYPE_OUTPUT_0* pz = (DTYPE_OUTPUT_0*)PyArray_DATA(*z);
    for (npy_intp i = 0; i < n; ++i)
        pz[i] = *(DTYPE_INPUT_0*)(px + i * sx) * *(DTYPE_INPUT_1*)(py + i * sy);
    return 0;
}
