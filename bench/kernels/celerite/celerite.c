#section support_code_apply

// The log-likelihood of a Gaussian process with a celerite kernel (Foreman-Mackey et al. 2017),
// in O(N J^2): real terms k(tau) = a exp(-c tau), complex terms
// k(tau) = exp(-c tau) (a cos(d tau) + b sin(d tau)), observed at sorted times t with white
// noise `diag` (yerr^2 plus any jitter) on the diagonal. The covariance is semiseparable of rank
// J = J_real + 2 J_complex: K = diag(A) + tril(U V^T o P) + its transpose, which factors as
// L D L^T row by row (the S and F recursions of celerite2):
//   S_n = P_n (S_{n-1} + d_{n-1} W_{n-1}^T W_{n-1}) P_n,  d_n = A_n - U_n S_n U_n^T,
//   W_n = (V_n - U_n S_n) / d_n,  F_n = P_n (F_{n-1} + W_{n-1}^T z_{n-1}),  z_n = y_n - U_n F_n,
// with P_n = diag(exp(-c (t_n - t_{n-1}))); then log L = -(sum z^2 / d + log d + log 2 pi) / 2.
// Written with the DTYPE macros and no gradient of its own: libsection derives it. Its values
// are kept in the log-likelihood's own type, DTYPE_OUTPUT_0. The kernel's rows and the check of
// the inputs are in celerite_kernel.c, which the op's files list first.

int APPLY_SPECIFIC(celerite_loglik)(PyArrayObject* a_real, PyArrayObject* c_real,
                                    PyArrayObject* a_complex, PyArrayObject* b_complex,
                                    PyArrayObject* c_complex, PyArrayObject* d_complex,
                                    PyArrayObject* t, PyArrayObject* diag, PyArrayObject* y,
                                    PyArrayObject** out)
{
    PyArrayObject* in[9] = {a_real, c_real, a_complex, b_complex, c_complex, d_complex, t, diag, y};
    if (APPLY_SPECIFIC(celerite_check)(in)) return 1;
    npy_intp jr = PyArray_DIMS(a_real)[0], jc = PyArray_DIMS(a_complex)[0];
    npy_intp n = PyArray_DIMS(t)[0], J = jr + 2 * jc;
    // coefficients (2 jr + 4 jc), then c, U_n, V_n, W, F, U_n S_n, P_n (J each), then S (J x J)
    DTYPE_OUTPUT_0* coef =
        (DTYPE_OUTPUT_0*)malloc(sizeof(DTYPE_OUTPUT_0) * (2 * jr + 4 * jc + 7 * J + J * J + 1));
    if (NULL == coef) {
        PyErr_NoMemory();
        return 1;
    }
    DTYPE_OUTPUT_0* c = coef + 2 * jr + 4 * jc;
    DTYPE_OUTPUT_0 *u = c + J, *v = u + J, *w = v + J, *f = w + J;
    DTYPE_OUTPUT_0 *us = f + J, *p = us + J, *s = p + J;
    DTYPE_OUTPUT_0 a_sum = 0.0;
    for (npy_intp j = 0; j < jr; ++j) {
        coef[j] = *(DTYPE_INPUT_0*)PyArray_GETPTR1(a_real, j);
        c[j] = coef[jr + j] = *(DTYPE_INPUT_1*)PyArray_GETPTR1(c_real, j);
        a_sum += coef[j];
    }
    for (npy_intp j = 0; j < jc; ++j) {
        DTYPE_OUTPUT_0* complex_term = coef + 2 * jr + j;
        complex_term[0] = *(DTYPE_INPUT_2*)PyArray_GETPTR1(a_complex, j);
        complex_term[jc] = *(DTYPE_INPUT_3*)PyArray_GETPTR1(b_complex, j);
        complex_term[2 * jc] = *(DTYPE_INPUT_4*)PyArray_GETPTR1(c_complex, j);
        complex_term[3 * jc] = *(DTYPE_INPUT_5*)PyArray_GETPTR1(d_complex, j);
        c[jr + 2 * j] = c[jr + 2 * j + 1] = complex_term[2 * jc];
        a_sum += complex_term[0];
    }
    for (npy_intp k = 0; k < J * J; ++k) s[k] = 0.0;
    for (npy_intp j = 0; j < J; ++j) f[j] = w[j] = 0.0;
    DTYPE_OUTPUT_0 loglik = 0.0, t_prev = 0.0, d = 1.0, z = 0.0;
    int failed = 0;
    for (npy_intp i = 0; i < n && !failed; ++i) {
        DTYPE_OUTPUT_0 ti = *(DTYPE_INPUT_6*)PyArray_GETPTR1(t, i);
        if (i > 0 && ti < t_prev) {
            PyErr_Format(PyExc_ValueError, "celerite: t[%ld] < t[%ld]; sort the times", (long)i,
                         (long)(i - 1));
            failed = 1;
            break;
        }
        APPLY_SPECIFIC(celerite_row)(coef, jr, jc, ti, u, v);
        if (i > 0) {
            for (npy_intp j = 0; j < J; ++j) p[j] = exp(-c[j] * (ti - t_prev));
            for (npy_intp j = 0; j < J; ++j) {
                for (npy_intp k = 0; k < J; ++k)
                    s[j * J + k] = p[j] * p[k] * (s[j * J + k] + d * w[j] * w[k]);
                f[j] = p[j] * (f[j] + w[j] * z);
            }
        }
        DTYPE_OUTPUT_0 ai = *(DTYPE_INPUT_7*)PyArray_GETPTR1(diag, i) + a_sum;
        z = *(DTYPE_INPUT_8*)PyArray_GETPTR1(y, i);
        for (npy_intp j = 0; j < J; ++j) {
            us[j] = 0.0;
            for (npy_intp k = 0; k < J; ++k) us[j] += u[k] * s[k * J + j];
            ai -= us[j] * u[j];
            z -= u[j] * f[j];
        }
        d = ai;
        if (!(d > 0)) {
            PyErr_Format(PyExc_ValueError,
                         "celerite: the covariance is not positive definite (row %ld of the "
                         "factorization); check the kernel's coefficients and diag",
                         (long)i);
            failed = 1;
            break;
        }
        for (npy_intp j = 0; j < J; ++j) w[j] = (v[j] - us[j]) / d;
        loglik -= 0.5 * (z * z / d + log(d));
        t_prev = ti;
    }
    free(coef);
    if (failed) return 1;
    loglik -= 0.5 * n * log(2.0 * M_PI);
    if (NULL == *out) {
        *out = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *out) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*out) = loglik;
    return 0;
}
