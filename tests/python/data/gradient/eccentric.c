#section support_code_apply

// The eccentric anomaly E of one point, E - e sin(E) = M, by Newton steps from M + 0.85 e until a
// step is below 1e-14: an elementwise solver written for 0-d inputs (a number each), batched over
// points by pt.vectorize, with no gradient of its own.
int APPLY_SPECIFIC(eccentric)(PyArrayObject* mean_anomaly, PyArrayObject* eccentricity,
                              PyArrayObject** out)
{
    DTYPE_INPUT_0 M = *(DTYPE_INPUT_0*)PyArray_DATA(mean_anomaly);
    DTYPE_INPUT_1 e = *(DTYPE_INPUT_1*)PyArray_DATA(eccentricity);
    if (!(e >= 0 && e < 1)) {
        PyErr_SetString(PyExc_ValueError, "eccentric: e is outside [0, 1)");
        return 1;
    }
    DTYPE_OUTPUT_0 E = M + 0.85 * e;
    for (int k = 0; k < 50; ++k) {
        DTYPE_OUTPUT_0 step = (E - e * sin(E) - M) / (1.0 - e * cos(E));
        E -= step;
        if (fabs(step) < 1e-14) break;
    }
    if (NULL == *out) {
        *out = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *out) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*out) = E;
    return 0;
}
