#section support_code_apply
// out = x * y + z elementwise: one fused multiply-add where the compiler contracts it, two
// roundings where it does not, so its last bits tell which flags compiled it.
int APPLY_SPECIFIC(fma3)(PyArrayObject* x, PyArrayObject* y, PyArrayObject* z,
                         PyArrayObject** out)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (*out == NULL || PyArray_DIMS(*out)[0] != n) {
        Py_XDECREF(*out);
        *out = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);
        if (*out == NULL) return 1;
    }
    const double* px = (const double*)PyArray_DATA(x);
    const double* py = (const double*)PyArray_DATA(y);
    const double* pz = (const double*)PyArray_DATA(z);
    double* po = (double*)PyArray_DATA(*out);
    for (npy_intp i = 0; i < n; ++i)
        po[i] = px[i] * py[i] + pz[i];
    return 0;
}
