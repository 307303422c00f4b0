#section support_code

#include <math.h>

#section support_code_apply

// The hand-written reverse-mode gradient of kepler.c, as exoplanet-era codes write it: no
// derivative of the iterations, the implicit function theorem at the solution instead. With
// D = 1 - e cos E, E - e sin E = M gives dE/dM = 1 / D and dE/de = sin E / D, and in terms of
// the true anomaly f (1 + e cos f = (1 - e^2) / D):
//   df/dM = (1 + e cos f)^2 / (1 - e^2)^(3/2),   df/de = sin f (2 + e cos f) / (1 - e^2).
// Given the cotangents of sin f and cos f, the cotangent of f is g_sin cos f - g_cos sin f.
int APPLY_SPECIFIC(kepler_grad)(PyArrayObject* eccentricity, PyArrayObject* sin_f,
                                PyArrayObject* cos_f, PyArrayObject* g_sin, PyArrayObject* g_cos,
                                PyArrayObject** grad_m, PyArrayObject** grad_e)
{
    npy_intp n = PyArray_DIMS(eccentricity)[0];
    PyArrayObject* given[4] = {sin_f, cos_f, g_sin, g_cos};
    for (int k = 0; k < 4; ++k) {
        if (PyArray_DIMS(given[k])[0] != n) {
            PyErr_Format(PyExc_ValueError,
                         "kepler_grad: input %d has %ld elements and e has %ld; they go together",
                         k + 1, (long)PyArray_DIMS(given[k])[0], (long)n);
            return 1;
        }
    }
    PyArrayObject** outputs[2] = {grad_m, grad_e};
    for (int k = 0; k < 2; ++k) {
        if (NULL == *outputs[k] || PyArray_DIMS(*outputs[k])[0] != n) {
            Py_XDECREF(*outputs[k]);
            *outputs[k] = (PyArrayObject*)PyArray_EMPTY(1, &n, NPY_FLOAT64, 0);
            if (NULL == *outputs[k]) return 1;
        }
    }
    for (npy_intp i = 0; i < n; ++i) {
        double e = *(double*)PyArray_GETPTR1(eccentricity, i);
        double sf = *(double*)PyArray_GETPTR1(sin_f, i);
        double cf = *(double*)PyArray_GETPTR1(cos_f, i);
        double g_f = *(double*)PyArray_GETPTR1(g_sin, i) * cf -
                     *(double*)PyArray_GETPTR1(g_cos, i) * sf;
        double one_minus_e2 = 1.0 - e * e;
        double q = 1.0 + e * cf;
        *(double*)PyArray_GETPTR1(*grad_m, i) = g_f * q * q / (one_minus_e2 * sqrt(one_minus_e2));
        *(double*)PyArray_GETPTR1(*grad_e, i) = g_f * sf * (2.0 + e * cf) / one_minus_e2;
    }
    return 0;
}
