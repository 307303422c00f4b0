#section support_code_apply
// logp = -0.5 * sum((y - mu)^2): a unit-variance Gaussian likelihood of data y around mu
// (0-d tensor), without its constant.
int APPLY_SPECIFIC(gauss_loglike)(PyArrayObject* y, PyArrayObject* mu, PyArrayObject** logp)
{
    double m = *(DTYPE_INPUT_1*)PyArray_DATA(mu), sum = 0;
    npy_intp n = PyArray_DIMS(y)[0], s = PyArray_STRIDES(y)[0];
    // The loop reads only the arrays: other threads may run meanwhile (nutpie's chains).
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp i = 0; i < n; ++i) {
        double r = *(DTYPE_INPUT_0*)(PyArray_BYTES(y) + i * s) - m;
        sum += r * r;
    }
    Py_END_ALLOW_THREADS
    if (*logp == NULL) {
        *logp = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (*logp == NULL) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*logp) = -0.5 * sum;
    return 0;
}
