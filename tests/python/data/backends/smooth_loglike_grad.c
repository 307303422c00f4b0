#section support_code_apply
// d logp / d alpha of smooth_loglike.c, carried along the recursion:
// ds_t/dalpha = y_t - s_{t-1} + (1-alpha) ds_{t-1}/dalpha, and each residual adds r * ds_{t-1}.
int APPLY_SPECIFIC(smooth_loglike_grad)(PyArrayObject* y, PyArrayObject* alpha,
                                        PyArrayObject** dalpha)
{
    double a = *(DTYPE_INPUT_1*)PyArray_DATA(alpha), grad = 0;
    npy_intp n = PyArray_DIMS(y)[0], st = PyArray_STRIDES(y)[0];
    char const* data = PyArray_BYTES(y);
    Py_BEGIN_ALLOW_THREADS
    if (n > 0) {
        double s = *(DTYPE_INPUT_0 const*)data, ds = 0;
        for (npy_intp t = 1; t < n; ++t) {
            double yt = *(DTYPE_INPUT_0 const*)(data + t * st), r = yt - s;
            grad += r * ds;
            ds = yt - s + (1 - a) * ds;
            s = a * yt + (1 - a) * s;
        }
    }
    Py_END_ALLOW_THREADS
    if (*dalpha == NULL) {
        *dalpha = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (*dalpha == NULL) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*dalpha) = grad;
    return 0;
}
