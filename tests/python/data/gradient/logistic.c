#section support_code_apply

// Logistic growth, y' = r y (1 - y / K) from y(0) = y0, by Euler steps of `dt` (a param), and
// the Gaussian log-likelihood of one observation per step with noise `sigma` (a param).
// Written once, with the DTYPE macros: libsection derives its gradient.
static DTYPE_OUTPUT_0 APPLY_SPECIFIC(growth)(DTYPE_INPUT_0 y, DTYPE_INPUT_0 r, DTYPE_INPUT_0 k)
{
    return r * y * (1.0 - y / k);
}

int APPLY_SPECIFIC(logistic_loglik)(PyArrayObject* theta, PyArrayObject* obs,
                                    PyArrayObject** out, PARAMS_TYPE* params)
{
    if (PyArray_DIMS(theta)[0] != 3) {
        PyErr_SetString(PyExc_ValueError, "logistic_loglik: theta is (r, K, y0)");
        return 1;
    }
    DTYPE_INPUT_0 r = *(DTYPE_INPUT_0*)PyArray_GETPTR1(theta, 0);
    DTYPE_INPUT_0 k = *(DTYPE_INPUT_0*)PyArray_GETPTR1(theta, 1);
    DTYPE_INPUT_0 y = *(DTYPE_INPUT_0*)PyArray_GETPTR1(theta, 2);
    npy_intp n = PyArray_DIMS(obs)[0];
    double dt = params->dt, sigma = params->sigma;
    DTYPE_OUTPUT_0 ll = 0.0;
    for (npy_intp i = 0; i < n; ++i) {
        y = y + dt * APPLY_SPECIFIC(growth)(y, r, k);
        DTYPE_OUTPUT_0 e = (*(DTYPE_INPUT_1*)PyArray_GETPTR1(obs, i) - y) / sigma;
        ll -= 0.5 * e * e;
    }
    ll -= n * (log(sigma) + 0.5 * log(2 * M_PI));
    if (NULL == *out) {
        *out = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *out) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*out) = ll;
    return 0;
}
