#section support_code

#include <math.h>

#section support_code_apply

// Kepler's equation, E - e sin(E) = M, solved element by element for the eccentric anomaly E,
// and the sine and cosine of the true anomaly f that radial-velocity and transit models use:
//   cos f = (cos E - e) / (1 - e cos E),   sin f = sqrt(1 - e^2) sin E / (1 - e cos E).
// M is first reduced to [-pi, pi); E starts from Danby's guess, M + 0.85 e sign(sin M), and takes
// Halley steps until a step is below 1e-12 (2 to 5 of them for e up to 0.95).
// Written with the DTYPE macros and no gradient of its own: libsection derives it.
int APPLY_SPECIFIC(kepler)(PyArrayObject* mean_anomaly, PyArrayObject* eccentricity,
                           PyArrayObject** sin_f, PyArrayObject** cos_f)
{
    npy_intp n = PyArray_DIMS(mean_anomaly)[0];
    if (PyArray_DIMS(eccentricity)[0] != n) {
        PyErr_Format(PyExc_ValueError,
                     "kepler: M has %ld elements and e has %ld; give one eccentricity per M",
                     (long)n, (long)PyArray_DIMS(eccentricity)[0]);
        return 1;
    }
    PyArrayObject** outputs[2] = {sin_f, cos_f};
    for (int k = 0; k < 2; ++k) {
        if (NULL == *outputs[k] || PyArray_DIMS(*outputs[k])[0] != n) {
            Py_XDECREF(*outputs[k]);
            *outputs[k] = (PyArrayObject*)PyArray_EMPTY(1, &n, TYPENUM_OUTPUT_0, 0);
            if (NULL == *outputs[k]) return 1;
        }
    }
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 M = *(DTYPE_INPUT_0*)PyArray_GETPTR1(mean_anomaly, i);
        DTYPE_INPUT_1 e = *(DTYPE_INPUT_1*)PyArray_GETPTR1(eccentricity, i);
        if (!(e >= 0 && e < 1)) {
            PyErr_Format(PyExc_ValueError,
                         "kepler: e[%ld] is outside [0, 1), where an orbit is elliptic", (long)i);
            return 1;
        }
        DTYPE_OUTPUT_0 m = M - 2.0 * M_PI * floor((M + M_PI) / (2.0 * M_PI));
        DTYPE_OUTPUT_0 E = m + (sin(m) < 0 ? -0.85 : 0.85) * e;
        for (int iteration = 0; iteration < 30; ++iteration) {
            DTYPE_OUTPUT_0 s = e * sin(E), c = e * cos(E);
            DTYPE_OUTPUT_0 f0 = E - s - m, f1 = 1.0 - c;
            DTYPE_OUTPUT_0 step = f0 / (f1 - 0.5 * f0 * s / f1);
            E -= step;
            if (fabs(step) < 1e-12) break;
        }
        DTYPE_OUTPUT_0 denominator = 1.0 - e * cos(E);
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*sin_f, i) = sqrt(1.0 - e * e) * sin(E) / denominator;
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*cos_f, i) = (cos(E) - e) / denominator;
    }
    return 0;
}
