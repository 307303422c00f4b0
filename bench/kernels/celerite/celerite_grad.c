#section support_code

#include <string.h>

#section support_code_apply

// The hand-written reverse-mode gradient of celerite.c's log-likelihood in every input (the
// coefficients, t, diag and y), as celerite2 writes it: the factorization's forward sweep keeps
// S_n, F_n, W_n, d_n and z_n of every row (O(N J^2) memory), then one backward sweep takes the
// adjoint of each step in reverse order, carrying the adjoints of S and F. The outputs are the
// log-likelihood's derivatives, each of its input's shape; DTYPE_OUTPUT_0 is double here.

// The adjoints of row n's U and V (bu, bv) into the coefficients' (bcoef) and t_n's (*bt): the
// reverse of celerite_row.
static void APPLY_SPECIFIC(row_adjoint)(const double* coef, npy_intp jr, npy_intp jc, double t,
                                        const double* bu, const double* bv, double* bcoef,
                                        double* bt)
{
    const double *ac = coef + 2 * jr, *bc = ac + jc, *dc = bc + 2 * jc;
    double *bac = bcoef + 2 * jr, *bbc = bac + jc, *bdc = bbc + 2 * jc;
    for (npy_intp j = 0; j < jr; ++j) bcoef[j] += bu[j];
    for (npy_intp j = 0; j < jc; ++j) {
        npy_intp col = jr + 2 * j;
        double cos_dt = cos(dc[j] * t), sin_dt = sin(dc[j] * t);
        bac[j] += bu[col] * cos_dt + bu[col + 1] * sin_dt;
        bbc[j] += bu[col] * sin_dt - bu[col + 1] * cos_dt;
        double b_cos = bu[col] * ac[j] - bu[col + 1] * bc[j] + bv[col];
        double b_sin = bu[col] * bc[j] + bu[col + 1] * ac[j] + bv[col + 1];
        double b_angle = b_cos * -sin_dt + b_sin * cos_dt;
        bdc[j] += b_angle * t;
        *bt += b_angle * dc[j];
    }
}

// The kernel, what the forward sweep keeps of each row, and the scratch of both sweeps: one
// zeroed allocation (`block`).
typedef struct {
    npy_intp jr, jc, J, n;
    double *coef, *c;                   // the coefficients (celerite_row's layout), the decays
    double *S, *F, *W, *d, *z;          // S_n (J x J), F_n, W_n (J), d_n, z_n of every row
    double *u, *v, *bu, *bv, *p, *us;   // one row's U, V, their adjoints, P_n, U_n S_n
    double *g, *bF, *bw, *bw_prev, *bc, *bp, *btmp;
    double *A, *bS, *bA;                // J x J
    double *bt, *ba, *by, *bcoef;       // the adjoints of t, A (diag), y and the coefficients
    double* block;
} APPLY_SPECIFIC(tape);

static double* APPLY_SPECIFIC(take)(double** next, npy_intp count)
{
    double* start = *next;
    *next += count;
    return start;
}

// Allocates the tape for tp->n rows of tp->J columns; 1 (a MemoryError) when out of memory.
static int APPLY_SPECIFIC(tape_alloc)(APPLY_SPECIFIC(tape) * tp)
{
    npy_intp n = tp->n, J = tp->J, ncoef = 2 * tp->jr + 4 * tp->jc;
    npy_intp total = n * (J * J + 2 * J + 5) + 15 * J + 3 * J * J + 2 * ncoef + 1;
    tp->block = (double*)calloc((size_t)total, sizeof(double));
    if (NULL == tp->block) {
        PyErr_NoMemory();
        return 1;
    }
    double* next = tp->block;
    double** per_row[] = {&tp->F, &tp->W};
    double** rows[] = {&tp->c,  &tp->u,  &tp->v,       &tp->bu, &tp->bv, &tp->p,   &tp->us,
                       &tp->g,  &tp->bF, &tp->bw,      &tp->bw_prev,     &tp->bc,  &tp->bp,
                       &tp->btmp};
    double** squares[] = {&tp->A, &tp->bS, &tp->bA};
    double** columns[] = {&tp->d, &tp->z, &tp->bt, &tp->ba, &tp->by};
    tp->S = APPLY_SPECIFIC(take)(&next, n * J * J);
    for (size_t r = 0; r < 2; ++r) *per_row[r] = APPLY_SPECIFIC(take)(&next, n * J);
    for (size_t r = 0; r < 14; ++r) *rows[r] = APPLY_SPECIFIC(take)(&next, J);
    for (size_t r = 0; r < 3; ++r) *squares[r] = APPLY_SPECIFIC(take)(&next, J * J);
    for (size_t r = 0; r < 5; ++r) *columns[r] = APPLY_SPECIFIC(take)(&next, n);
    tp->coef = APPLY_SPECIFIC(take)(&next, ncoef);
    tp->bcoef = APPLY_SPECIFIC(take)(&next, ncoef);
    return 0;
}

// The forward sweep of celerite.c, keeping every row; a ValueError on unsorted times or a
// covariance that is not positive definite.
static int APPLY_SPECIFIC(forward)(APPLY_SPECIFIC(tape) * tp, PyArrayObject* t,
                                   PyArrayObject* diag, PyArrayObject* y)
{
    npy_intp J = tp->J;
    double a_sum = 0.0;
    for (npy_intp j = 0; j < tp->jr; ++j) a_sum += tp->coef[j];
    for (npy_intp j = 0; j < tp->jc; ++j) a_sum += tp->coef[2 * tp->jr + j];
    for (npy_intp i = 0; i < tp->n; ++i) {
        double ti = *(double*)PyArray_GETPTR1(t, i);
        double *S = tp->S + i * J * J, *F = tp->F + i * J;
        if (i > 0) {
            double t_prev = *(double*)PyArray_GETPTR1(t, i - 1);
            if (ti < t_prev) {
                PyErr_Format(PyExc_ValueError, "celerite: t[%ld] < t[%ld]; sort the times",
                             (long)i, (long)(i - 1));
                return 1;
            }
            const double* w = tp->W + (i - 1) * J;
            double d = tp->d[i - 1], z = tp->z[i - 1];
            for (npy_intp j = 0; j < J; ++j) tp->p[j] = exp(-tp->c[j] * (ti - t_prev));
            for (npy_intp j = 0; j < J; ++j) {
                for (npy_intp l = 0; l < J; ++l)
                    S[j * J + l] = tp->p[j] * tp->p[l] * (S[j * J + l - J * J] + d * w[j] * w[l]);
                F[j] = tp->p[j] * (F[j - J] + w[j] * z);
            }
        }
        APPLY_SPECIFIC(celerite_row)(tp->coef, tp->jr, tp->jc, ti, tp->u, tp->v);
        double d = *(double*)PyArray_GETPTR1(diag, i) + a_sum;
        double z = *(double*)PyArray_GETPTR1(y, i);
        for (npy_intp j = 0; j < J; ++j) {
            tp->us[j] = 0.0;
            for (npy_intp l = 0; l < J; ++l) tp->us[j] += tp->u[l] * S[l * J + j];
            d -= tp->us[j] * tp->u[j];
            z -= tp->u[j] * F[j];
        }
        if (!(d > 0)) {
            PyErr_Format(PyExc_ValueError,
                         "celerite: the covariance is not positive definite (row %ld of the "
                         "factorization); check the kernel's coefficients and diag",
                         (long)i);
            return 1;
        }
        tp->d[i] = d;
        tp->z[i] = z;
        for (npy_intp j = 0; j < J; ++j) tp->W[i * J + j] = (tp->v[j] - tp->us[j]) / d;
    }
    return 0;
}

// The adjoint of row i > 0's step (z_i, F_i, W_i, d_i, S_i, P_i in reverse order), given the
// adjoints of its z, d (*bz, *bd) and W (tp->bw) and the carried adjoints of S_i and F_i (tp->bS,
// tp->bF). Leaves those of row i - 1 in *bz, *bd, tp->bw, tp->bS and tp->bF.
static void APPLY_SPECIFIC(backward_step)(APPLY_SPECIFIC(tape) * tp, npy_intp i, double ti,
                                          double t_prev, double* bz, double* bd)
{
    npy_intp J = tp->J;
    const double *S = tp->S + i * J * J, *F = tp->F + i * J, *w = tp->W + i * J;
    const double *S_prev = S - J * J, *F_prev = F - J, *w_prev = w - J;
    double d = tp->d[i], d_prev = tp->d[i - 1], z_prev = tp->z[i - 1];
    double bz_prev = -z_prev / d_prev;
    double bd_prev = 0.5 * (z_prev * z_prev / (d_prev * d_prev) - 1.0 / d_prev);
    APPLY_SPECIFIC(celerite_row)(tp->coef, tp->jr, tp->jc, ti, tp->u, tp->v);
    for (npy_intp j = 0; j < J; ++j) {
        tp->p[j] = exp(-tp->c[j] * (ti - t_prev));
        tp->g[j] = F_prev[j] + w_prev[j] * z_prev;
        tp->us[j] = 0.0;
        for (npy_intp l = 0; l < J; ++l) {
            tp->A[j * J + l] = S_prev[j * J + l] + d_prev * w_prev[j] * w_prev[l];
            tp->us[j] += S[j * J + l] * tp->u[l];
        }
    }
    double bw_dot_w = 0.0;
    tp->by[i] = *bz;
    for (npy_intp j = 0; j < J; ++j) {
        tp->bu[j] = -*bz * F[j];                // z_i = y_i - U_i F_i
        tp->bF[j] -= *bz * tp->u[j];
        tp->bp[j] = tp->bF[j] * tp->g[j];       // F_i = P_i (F_{i-1} + W_{i-1} z_{i-1})
        tp->bF[j] *= tp->p[j];
        tp->bw_prev[j] = tp->bF[j] * z_prev;
        bz_prev += tp->bF[j] * w_prev[j];
        tp->bv[j] = tp->bw[j] / d;              // W_i = (V_i - U_i S_i) / d_i
        tp->btmp[j] = -tp->bw[j] / d;
        bw_dot_w += tp->bw[j] * w[j];
    }
    *bd -= bw_dot_w / d;
    tp->ba[i] = *bd;                            // d_i = A_i - U_i S_i U_i^T
    for (npy_intp j = 0; j < J; ++j) {
        tp->bu[j] -= *bd * tp->us[j];
        tp->btmp[j] -= *bd * tp->u[j];
    }
    for (npy_intp j = 0; j < J; ++j)            // U_i S_i
        for (npy_intp l = 0; l < J; ++l) {
            tp->bS[j * J + l] += tp->btmp[j] * tp->u[l];
            tp->bu[l] += S[j * J + l] * tp->btmp[j];
        }
    for (npy_intp j = 0; j < J; ++j)            // S_i = P_i A_i P_i, A_i = S_{i-1} + d W W^T
        for (npy_intp l = 0; l < J; ++l) {
            double b = tp->bS[j * J + l];
            tp->bp[j] += (b + tp->bS[l * J + j]) * tp->A[j * J + l] * tp->p[l];
            tp->bA[j * J + l] = tp->p[j] * tp->p[l] * b;
        }
    for (npy_intp j = 0; j < J; ++j)
        for (npy_intp l = 0; l < J; ++l) {
            double b = tp->bA[j * J + l];
            tp->bS[j * J + l] = b;
            bd_prev += w_prev[j] * b * w_prev[l];
            tp->bw_prev[j] += d_prev * (b + tp->bA[l * J + j]) * w_prev[l];
        }
    for (npy_intp j = 0; j < J; ++j) {          // P_i = exp(-c (t_i - t_{i-1}))
        double q = tp->bp[j] * tp->p[j];
        tp->bc[j] -= q * (ti - t_prev);
        tp->bt[i] -= q * tp->c[j];
        tp->bt[i - 1] += q * tp->c[j];
    }
    APPLY_SPECIFIC(row_adjoint)(tp->coef, tp->jr, tp->jc, ti, tp->bu, tp->bv, tp->bcoef,
                                tp->bt + i);
    memcpy(tp->bw, tp->bw_prev, sizeof(double) * (size_t)J);
    *bz = bz_prev;
    *bd = bd_prev;
}

// The backward sweep: the adjoints of every input from those of log L in each z_n and d_n.
static void APPLY_SPECIFIC(backward)(APPLY_SPECIFIC(tape) * tp, PyArrayObject* t)
{
    npy_intp n = tp->n, J = tp->J, jr = tp->jr, jc = tp->jc;
    if (n == 0) return;
    double z = tp->z[n - 1], d = tp->d[n - 1];
    double bz = -z / d, bd = 0.5 * (z * z / (d * d) - 1.0 / d);
    for (npy_intp i = n - 1; i > 0; --i)
        APPLY_SPECIFIC(backward_step)(tp, i, *(double*)PyArray_GETPTR1(t, i),
                                      *(double*)PyArray_GETPTR1(t, i - 1), &bz, &bd);
    double t0 = *(double*)PyArray_GETPTR1(t, 0), bw_dot_w = 0.0;
    APPLY_SPECIFIC(celerite_row)(tp->coef, jr, jc, t0, tp->u, tp->v);
    for (npy_intp j = 0; j < J; ++j) {          // W_0 = V_0 / d_0, d_0 = A_0, z_0 = y_0
        tp->bu[j] = 0.0;
        tp->bv[j] = tp->bw[j] / tp->d[0];
        bw_dot_w += tp->bw[j] * tp->W[j];
    }
    tp->ba[0] = bd - bw_dot_w / tp->d[0];
    tp->by[0] = bz;
    APPLY_SPECIFIC(row_adjoint)(tp->coef, jr, jc, t0, tp->bu, tp->bv, tp->bcoef, tp->bt);
    double ba_sum = 0.0;                        // A_n = diag_n + sum of the terms' a
    for (npy_intp i = 0; i < n; ++i) ba_sum += tp->ba[i];
    for (npy_intp j = 0; j < jr; ++j) {
        tp->bcoef[j] += ba_sum;
        tp->bcoef[jr + j] += tp->bc[j];
    }
    for (npy_intp j = 0; j < jc; ++j) {
        tp->bcoef[2 * jr + j] += ba_sum;
        tp->bcoef[2 * jr + 2 * jc + j] += tp->bc[jr + 2 * j] + tp->bc[jr + 2 * j + 1];
    }
}

int APPLY_SPECIFIC(celerite_grad)(PyArrayObject* a_real, PyArrayObject* c_real,
                                  PyArrayObject* a_complex, PyArrayObject* b_complex,
                                  PyArrayObject* c_complex, PyArrayObject* d_complex,
                                  PyArrayObject* t, PyArrayObject* diag, PyArrayObject* y,
                                  PyArrayObject** g0, PyArrayObject** g1, PyArrayObject** g2,
                                  PyArrayObject** g3, PyArrayObject** g4, PyArrayObject** g5,
                                  PyArrayObject** g6, PyArrayObject** g7, PyArrayObject** g8)
{
    PyArrayObject* in[9] = {a_real, c_real, a_complex, b_complex, c_complex, d_complex, t, diag, y};
    PyArrayObject** out[9] = {g0, g1, g2, g3, g4, g5, g6, g7, g8};
    if (APPLY_SPECIFIC(celerite_check)(in)) return 1;
    APPLY_SPECIFIC(tape) tp;
    tp.jr = PyArray_DIMS(a_real)[0];
    tp.jc = PyArray_DIMS(a_complex)[0];
    tp.n = PyArray_DIMS(t)[0];
    tp.J = tp.jr + 2 * tp.jc;
    if (APPLY_SPECIFIC(tape_alloc)(&tp)) return 1;
    // The coefficients in celerite_row's layout, inputs 0 to 5 one after the other.
    for (npy_intp k = 0, at = 0; k < 6; at += PyArray_DIMS(in[k])[0], ++k)
        for (npy_intp j = 0; j < PyArray_DIMS(in[k])[0]; ++j)
            tp.coef[at + j] = *(double*)PyArray_GETPTR1(in[k], j);
    for (npy_intp j = 0; j < tp.jr; ++j) tp.c[j] = tp.coef[tp.jr + j];
    for (npy_intp j = 0; j < tp.jc; ++j)
        tp.c[tp.jr + 2 * j] = tp.c[tp.jr + 2 * j + 1] = tp.coef[2 * tp.jr + 2 * tp.jc + j];
    int failed = APPLY_SPECIFIC(forward)(&tp, t, diag, y);
    if (!failed) APPLY_SPECIFIC(backward)(&tp, t);
    const double* grads[9] = {tp.bcoef,
                              tp.bcoef + tp.jr,
                              tp.bcoef + 2 * tp.jr,
                              tp.bcoef + 2 * tp.jr + tp.jc,
                              tp.bcoef + 2 * tp.jr + 2 * tp.jc,
                              tp.bcoef + 2 * tp.jr + 3 * tp.jc,
                              tp.bt,
                              tp.ba,
                              tp.by};
    for (int k = 0; k < 9 && !failed; ++k) {
        npy_intp len = PyArray_DIMS(in[k])[0];
        if (NULL == *out[k] || PyArray_DIMS(*out[k])[0] != len) {
            Py_XDECREF(*out[k]);
            *out[k] = (PyArrayObject*)PyArray_EMPTY(1, &len, NPY_FLOAT64, 0);
            if (NULL == *out[k]) {
                failed = 1;
                break;
            }
        }
        for (npy_intp j = 0; j < len; ++j) *(double*)PyArray_GETPTR1(*out[k], j) = grads[k][j];
    }
    free(tp.block);
    return failed;
}
