#section support_code_apply

// The hand-written gradient of logistic.c's log-likelihood in (r, K, y0): the Euler steps of
// the forward sensitivities s = dy/d(r, K, y0) beside y.
int APPLY_SPECIFIC(logistic_loglik_grad)(PyArrayObject* theta, PyArrayObject* obs,
                                         PyArrayObject** out, PARAMS_TYPE* params)
{
    if (PyArray_DIMS(theta)[0] != 3) {
        PyErr_SetString(PyExc_ValueError, "logistic_loglik_grad: theta is (r, K, y0)");
        return 1;
    }
    double r = *(double*)PyArray_GETPTR1(theta, 0);
    double k = *(double*)PyArray_GETPTR1(theta, 1);
    double y = *(double*)PyArray_GETPTR1(theta, 2);
    npy_intp n = PyArray_DIMS(obs)[0];
    double dt = params->dt, sigma = params->sigma;
    double s[3] = {0.0, 0.0, 1.0};
    double g[3] = {0.0, 0.0, 0.0};
    for (npy_intp i = 0; i < n; ++i) {
        double dfdy = r * (1.0 - 2.0 * y / k);
        double dfdr = y * (1.0 - y / k);
        double dfdk = r * y * y / (k * k);
        double f = r * y * (1.0 - y / k);
        s[0] += dt * (dfdy * s[0] + dfdr);
        s[1] += dt * (dfdy * s[1] + dfdk);
        s[2] += dt * (dfdy * s[2]);
        y += dt * f;
        double e = (*(double*)PyArray_GETPTR1(obs, i) - y) / (sigma * sigma);
        for (int j = 0; j < 3; ++j) g[j] += e * s[j];
    }
    if (NULL == *out) {
        *out = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(theta), NPY_FLOAT64, 0);
        if (NULL == *out) return 1;
    }
    for (int j = 0; j < 3; ++j) *(double*)PyArray_GETPTR1(*out, j) = g[j];
    return 0;
}
