#section support_code

#include <math.h>

#section support_code_apply

// dy/dt of a damped, driven oscillator: y = (position, velocity), p = (omega, zeta, force),
// y'' = force sin(t) - 2 zeta omega y' - omega^2 y.
static void APPLY_SPECIFIC(oscillator)(const double* p, double t, const double* y, double* dy)
{
    dy[0] = y[1];
    dy[1] = p[2] * sin(t) - 2.0 * p[1] * p[0] * y[1] - p[0] * p[0] * y[0];
}

// The state after `steps` classical Runge-Kutta steps of length `dt` from y0 at t = 0.
int APPLY_SPECIFIC(ode_solve)(PyArrayObject* p, PyArrayObject* y0, PyArrayObject** y,
                              PARAMS_TYPE* params)
{
    if (PyArray_DIMS(p)[0] != 3 || PyArray_DIMS(y0)[0] != 2) {
        PyErr_Format(PyExc_ValueError,
                     "ode_solve: p has %ld values and y0 %ld; the oscillator takes 3 and 2",
                     (long)PyArray_DIMS(p)[0], (long)PyArray_DIMS(y0)[0]);
        return 1;
    }
    if (NULL == *y || PyArray_DIMS(*y)[0] != 2) {
        Py_XDECREF(*y);
        *y = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(y0), TYPENUM_OUTPUT_0, 0);
        if (NULL == *y) return 1;
    }
    double par[3], s[2], k1[2], k2[2], k3[2], k4[2], tmp[2];
    for (int i = 0; i < 3; ++i) par[i] = *(DTYPE_INPUT_0*)PyArray_GETPTR1(p, i);
    for (int i = 0; i < 2; ++i) s[i] = *(DTYPE_INPUT_1*)PyArray_GETPTR1(y0, i);
    double const h = params->dt;
    for (npy_int64 n = 0; n < params->steps; ++n) {
        double const t = n * h;
        APPLY_SPECIFIC(oscillator)(par, t, s, k1);
        for (int i = 0; i < 2; ++i) tmp[i] = s[i] + 0.5 * h * k1[i];
        APPLY_SPECIFIC(oscillator)(par, t + 0.5 * h, tmp, k2);
        for (int i = 0; i < 2; ++i) tmp[i] = s[i] + 0.5 * h * k2[i];
        APPLY_SPECIFIC(oscillator)(par, t + 0.5 * h, tmp, k3);
        for (int i = 0; i < 2; ++i) tmp[i] = s[i] + h * k3[i];
        APPLY_SPECIFIC(oscillator)(par, t + h, tmp, k4);
        for (int i = 0; i < 2; ++i) s[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
    for (int i = 0; i < 2; ++i) *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*y, i) = s[i];
    return 0;
}
