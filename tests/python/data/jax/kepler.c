#section support_code_apply
// Kepler's equation M = E - e sin(E), solved for the eccentric anomaly E by Newton's method,
// elementwise over the mean anomalies M (float64, any shape), for one eccentricity e (0-d):
// the solver of exoplanet-style orbit models, which refuses an unbound orbit (e >= 1).
int APPLY_SPECIFIC(kepler)(PyArrayObject* mean, PyArrayObject* ecc, PyArrayObject** out)
{
    double e = *(DTYPE_INPUT_1*)PyArray_DATA(ecc);
    if (!(e >= 0.0 && e < 1.0)) {
        char message[96];
        snprintf(message, sizeof message, "kepler: eccentricity must be in [0, 1), got %g", e);
        PyErr_SetString(PyExc_ValueError, message);
        return 1;
    }
    if (*out == NULL || !PyArray_SAMESHAPE(*out, mean)) {
        Py_XDECREF(*out);
        *out = (PyArrayObject*)PyArray_EMPTY(PyArray_NDIM(mean), PyArray_DIMS(mean),
                                             TYPENUM_OUTPUT_0, 0);
        if (*out == NULL) return 1;
    }
    PyArrayObject* m = (PyArrayObject*)PyArray_GETCONTIGUOUS(mean);
    if (m == NULL) return 1;
    const double* pm = (const double*)PyArray_DATA(m);
    double* pe = (double*)PyArray_DATA(*out);
    npy_intp n = PyArray_SIZE(m);
    for (npy_intp i = 0; i < n; ++i) {
        double E = pm[i] + e * sin(pm[i]);
        for (int k = 0; k < 50; ++k) {
            double step = (E - e * sin(E) - pm[i]) / (1.0 - e * cos(E));
            E -= step;
            if (fabs(step) < 1e-15) break;
        }
        pe[i] = E;
    }
    Py_DECREF(m);
    return 0;
}
