#section support_code_struct
// Struct members: the counter and the function that returns it (called from the struct's run).
npy_int64 APPLY_SPECIFIC(calls);

int APPLY_SPECIFIC(count)(PyArrayObject* x, PyArrayObject** out)
{
    Py_XDECREF(*out);
    *out = (PyArrayObject*)PyArray_ZEROS(0, NULL, NPY_INT64, 0);
    if (*out == NULL) return 1;
    *(npy_int64*)PyArray_DATA(*out) = APPLY_SPECIFIC(calls)++;
    return 0;
}

#section init_code_struct
APPLY_SPECIFIC(calls) = 0;
