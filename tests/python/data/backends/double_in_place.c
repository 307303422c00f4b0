#section support_code_apply
// x *= 2 in place, and the output is x itself: the op destroys its input (destroy_map {0: [0]}),
// as PyTensor's in-place ops do.
int APPLY_SPECIFIC(double_in_place)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0], s = PyArray_STRIDES(x)[0];
    for (npy_intp i = 0; i < n; ++i) *(DTYPE_INPUT_0*)(PyArray_BYTES(x) + i * s) *= 2;
    Py_XDECREF(*z);
    Py_INCREF(x);
    *z = x;
    return 0;
}
