#section support_code_apply
// A recursive filter's likelihood: exponential smoothing s_t = alpha*y_t + (1-alpha)*s_{t-1},
// s_0 = y_0, predicts y_{t+1} with unit variance: logp = -0.5 * sum_{t>=1} (y_t - s_{t-1})^2.
// Each step needs the last, which is what PyTensor can only write as a scan.
int APPLY_SPECIFIC(smooth_loglike)(PyArrayObject* y, PyArrayObject* alpha, PyArrayObject** logp)
{
    double a = *(DTYPE_INPUT_1*)PyArray_DATA(alpha), sum = 0;
    npy_intp n = PyArray_DIMS(y)[0], st = PyArray_STRIDES(y)[0];
    char const* data = PyArray_BYTES(y);
    Py_BEGIN_ALLOW_THREADS
    if (n > 0) {
        double s = *(DTYPE_INPUT_0 const*)data;
        for (npy_intp t = 1; t < n; ++t) {
            double yt = *(DTYPE_INPUT_0 const*)(data + t * st), r = yt - s;
            sum += r * r;
            s = a * yt + (1 - a) * s;
        }
    }
    Py_END_ALLOW_THREADS
    if (*logp == NULL) {
        *logp = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (*logp == NULL) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*logp) = -0.5 * sum;
    return 0;
}
