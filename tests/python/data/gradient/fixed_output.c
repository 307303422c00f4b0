#section support_code_apply

// 3 x - 1, elementwise, into an output made with a fixed NPY_DOUBLE (the tutorials' idiom):
// right in the op's own module, but the output of its derived gradient's module holds numbers
// larger than a double, which this array is too small for.
int APPLY_SPECIFIC(affine)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_DOUBLE, 0);
    if (NULL == *z) return 1;
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = 3 * *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i) - 1;
    return 0;
}
