#section support_code_apply
// z = 2 x in an array of its own every call (it never writes into the output it is given); one
// element longer when x[0] is negative, a shape no batch's other rows have.
int APPLY_SPECIFIC(own_output)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    double const first = n ? *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, 0) : 0.0;
    npy_intp const m = first < 0 ? n + 1 : n;
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_ZEROS(1, (npy_intp*)&m, TYPENUM_OUTPUT_0, 0);
    if (NULL == *z) return 1;
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = 2 * *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
    return 0;
}
