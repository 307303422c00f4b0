#section support_code_apply

// Scales x by alpha, adds k, and writes the result to z; the params carry alpha, k and an
// offset vector.
int APPLY_SPECIFIC(scale_shift)(PyArrayObject* x, PyArrayObject** z, PARAMS_TYPE* params)
{
    DTYPE_PARAM_alpha alpha = params->alpha;
    DTYPE_PARAM_k k = params->k;
    npy_intp n = PyArray_DIMS(x)[0];
    if (PyArray_DIMS(params->offset)[0] != n) {
        PyErr_SetString(PyExc_ValueError, "offset and x differ in length");
        return 1;
    }
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
    if (!*z) return 1;
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_OUTPUT_0* out = (DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i);
        DTYPE_INPUT_0 xi = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        DTYPE_PARAM_offset oi = *(DTYPE_PARAM_offset*)PyArray_GETPTR1(params->offset, i);
        *out = alpha * xi + k + oi;
    }
    return 0;
}

#section init_code_struct

// The params struct is ready here: check it once per thunk.
if (PARAMS->k < 0) {
    PyErr_SetString(PyExc_ValueError, "k must not be negative");
    FAIL;
}
