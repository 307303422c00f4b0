#section support_code_apply
// Spins for `seconds` with the GIL released and returns when it started and stopped
// (CLOCK_MONOTONIC): calls that run at once have overlapping intervals.
static double APPLY_SPECIFIC(now)(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int APPLY_SPECIFIC(spin_times)(PyArrayObject* seconds, PyArrayObject** times)
{
    npy_intp two = 2;
    if (*times == NULL || PyArray_DIMS(*times)[0] != 2) {
        Py_XDECREF(*times);
        *times = (PyArrayObject*)PyArray_EMPTY(1, &two, NPY_FLOAT64, 0);
        if (*times == NULL) return 1;
    }
    double wait = *(double*)PyArray_DATA(seconds);
    double* out = (double*)PyArray_DATA(*times);
    Py_BEGIN_ALLOW_THREADS
    double start = APPLY_SPECIFIC(now)();
    while (APPLY_SPECIFIC(now)() - start < wait) {
    }
    out[0] = start;
    out[1] = APPLY_SPECIFIC(now)();
    Py_END_ALLOW_THREADS
    return 0;
}
