#section support_code

#include <math.h>
#include <stdlib.h>

#section support_code_apply

// What celerite.c and celerite_grad.c share: the kernel's semiseparable rows and the check of
// the inputs' lengths. The values are of the log-likelihood's type (DTYPE_OUTPUT_0): dual
// numbers in celerite.c's derived gradient, doubles in celerite_grad.c.

// Row n of U and V at time `t`, from the coefficients `coef` = (a_real, c_real, a_complex,
// b_complex, c_complex, d_complex): a real term's column is (a, 1), a complex term's two are
// (a cos + b sin, a sin - b cos) and (cos, sin) of d t.
static void APPLY_SPECIFIC(celerite_row)(const DTYPE_OUTPUT_0* coef, npy_intp jr, npy_intp jc,
                                         DTYPE_OUTPUT_0 t, DTYPE_OUTPUT_0* u, DTYPE_OUTPUT_0* v)
{
    const DTYPE_OUTPUT_0* ac = coef + 2 * jr;
    const DTYPE_OUTPUT_0* bc = ac + jc;
    const DTYPE_OUTPUT_0* dc = bc + 2 * jc;
    for (npy_intp j = 0; j < jr; ++j) {
        u[j] = coef[j];
        v[j] = 1.0;
    }
    for (npy_intp j = 0; j < jc; ++j) {
        DTYPE_OUTPUT_0 cos_dt = cos(dc[j] * t), sin_dt = sin(dc[j] * t);
        u[jr + 2 * j] = ac[j] * cos_dt + bc[j] * sin_dt;
        u[jr + 2 * j + 1] = ac[j] * sin_dt - bc[j] * cos_dt;
        v[jr + 2 * j] = cos_dt;
        v[jr + 2 * j + 1] = sin_dt;
    }
}

// Whether the inputs' lengths go together; else a ValueError naming the first that does not.
static int APPLY_SPECIFIC(celerite_check)(PyArrayObject** in)
{
    static const char* names[9] = {"a_real",    "c_real",    "a_complex", "b_complex", "c_complex",
                                   "d_complex", "t",         "diag",      "y"};
    static const int same_as[9] = {0, 0, 2, 2, 2, 2, 6, 6, 6};
    for (int k = 0; k < 9; ++k) {
        npy_intp expected = PyArray_DIMS(in[same_as[k]])[0];
        if (PyArray_DIMS(in[k])[0] != expected) {
            PyErr_Format(PyExc_ValueError,
                         "celerite: %s has %ld values and %s %ld; they go together", names[k],
                         (long)PyArray_DIMS(in[k])[0], names[same_as[k]], (long)expected);
            return 1;
        }
    }
    return 0;
}
