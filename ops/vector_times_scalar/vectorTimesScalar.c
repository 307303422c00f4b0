#section support_code_apply

// z = x * a for a vector x and a scalar a (PyTensor's COp tutorial op, as a section file).
int APPLY_SPECIFIC(vector_times_scalar)(PyArrayObject* x, DTYPE_INPUT_1 a,
                                        PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) {
            PyErr_SetString(PyExc_MemoryError, "vector_times_scalar: cannot allocate the output");
            return 1;
        }
    }
    char* x_data = (char*)PyArray_DATA(x);
    npy_intp x_stride = PyArray_STRIDES(x)[0];
    DTYPE_OUTPUT_0* z_data = (DTYPE_OUTPUT_0*)PyArray_DATA(*z);
    npy_intp z_stride = PyArray_STRIDES(*z)[0] / ITEMSIZE_OUTPUT_0;
    for (npy_intp i = 0; i < n; ++i) {
        z_data[i * z_stride] = *(DTYPE_INPUT_0*)(x_data + i * x_stride) * a;
    }
    return 0;
}
