#section support_code_apply
// z = x + (x's number of dimensions): which arrays the C code got, rows or a whole batch, shows
// in the result.
int APPLY_SPECIFIC(plus_ndim)(PyArrayObject* x, PyArrayObject** z)
{
    int const nd = PyArray_NDIM(x);
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewLikeArray(x, NPY_CORDER, NULL, 0);
    if (NULL == *z) return 1;
    if (PyArray_CopyInto(*z, x) < 0) return 1;
    DTYPE_OUTPUT_0* pz = (DTYPE_OUTPUT_0*)PyArray_DATA(*z);
    for (npy_intp i = 0; i < PyArray_SIZE(*z); ++i) pz[i] += nd;
    return 0;
}
