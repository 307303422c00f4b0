#section support_code_apply

// x * x, elementwise, after copying x into the output with memcpy of n * sizeof(double): right
// in the op's own module, but on dual numbers it copies a fraction of x's elements (each dual
// is wider than a double; the rest stay 0), so the derived gradient is refused when it runs.
int APPLY_SPECIFIC(square)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_ZEROS(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    memcpy(PyArray_DATA(*z), PyArray_DATA(x), n * sizeof(double));
    DTYPE_OUTPUT_0* out = (DTYPE_OUTPUT_0*)PyArray_DATA(*z);
    for (npy_intp i = 0; i < n; ++i) out[i] = out[i] * out[i];
    return 0;
}
