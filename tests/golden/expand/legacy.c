PYTENSOR_SUPPORT_CODE_SECTION

static double legacy_scale(npy_int64 factor) { return (double)factor; }

PYTENSOR_APPLY_CODE_SECTION

int APPLY_SPECIFIC(legacy_fill)(PyObject* tag, PyObject* factor, PyArrayObject** z)
{
    (void)tag;
    npy_intp one = 1;
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, &one, TYPENUM_OUTPUT_0, 0);
    if (!*z) return 1;
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = legacy_scale(PyLong_AsLongLong(factor));
    return 0;
}
