#section support_code_apply

// z = x * scale + shift, with scale and shift op parameters (a ParamsType).
int APPLY_SPECIFIC(scale_shift)(PyArrayObject* x, PyArrayObject** z, PARAMS_TYPE* params)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    DTYPE_PARAM_scale scale = params->scale;
    DTYPE_PARAM_shift shift = params->shift;
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 v = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = (DTYPE_OUTPUT_0)(v * scale + shift);
    }
    return 0;
}
