#section support_code_apply
// d logp / d mu = sum(y - mu), the gradient of gauss_loglike_as_written.c, written alike.
int APPLY_SPECIFIC(gauss_loglike_grad)(PyArrayObject* y, PyArrayObject* mu, PyArrayObject** dmu)
{
    double m = *(DTYPE_INPUT_1*)PyArray_DATA(mu), sum = 0;
    npy_intp n = PyArray_DIMS(y)[0], s = PyArray_STRIDES(y)[0];
    for (npy_intp i = 0; i < n; ++i)
        sum += *(DTYPE_INPUT_0*)(PyArray_BYTES(y) + i * s) - m;
    if (*dmu == NULL) {
        *dmu = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (*dmu == NULL) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*dmu) = sum;
    return 0;
}
