#section support_code_apply
// logp = -0.5 * sum((y - mu)^2), a unit-variance Gaussian log-likelihood of data y around mu
// (0-d tensor), as PyTensor users write such an op: one loop over the data, the output made
// with NumPy when there is none to reuse, and no Py_BEGIN_ALLOW_THREADS (the linker runs the
// code without the GIL, taking it back around PyArray_EMPTY).
int APPLY_SPECIFIC(gauss_loglike)(PyArrayObject* y, PyArrayObject* mu, PyArrayObject** logp)
{
    double m = *(DTYPE_INPUT_1*)PyArray_DATA(mu), sum = 0;
    npy_intp n = PyArray_DIMS(y)[0], s = PyArray_STRIDES(y)[0];
    for (npy_intp i = 0; i < n; ++i) {
        double r = *(DTYPE_INPUT_0*)(PyArray_BYTES(y) + i * s) - m;
        sum += r * r;
    }
    if (*logp == NULL) {
        *logp = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (*logp == NULL) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*logp) = -0.5 * sum;
    return 0;
}
