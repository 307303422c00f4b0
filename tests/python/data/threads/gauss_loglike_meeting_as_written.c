#section support_code_apply
// gauss_loglike_as_written.c whose first calls from two threads other than the test's meet
// inside the op, and which logs the interval of each call from inside its C code. state (an
// int64 array passed by its address): [the test thread's id, calls waiting, 1 once two met or
// -1 once one gave up, calls of other threads than the test's, (start, end) of each of their
// first 16 calls in ns of CLOCK_MONOTONIC, (0, 0) for one that failed]. A call from another
// thread, before two met, waits there until a second one arrives: that can only happen if the
// linker runs the op's code without the GIL (a hang guard gives up after 20 s, and no call
// waits after that).
static npy_int64 APPLY_SPECIFIC(now)(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (npy_int64)t.tv_sec * 1000000000 + t.tv_nsec;
}

int APPLY_SPECIFIC(gauss_loglike_meeting)(PyArrayObject* y, PyArrayObject* mu,
                                          PyArrayObject* address, PyArrayObject** logp)
{
    npy_int64 const start = APPLY_SPECIFIC(now)();
    npy_int64* state = (npy_int64*)(npy_intp) * (npy_int64*)PyArray_DATA(address);
    double m = *(DTYPE_INPUT_1*)PyArray_DATA(mu), sum = 0;
    npy_intp n = PyArray_DIMS(y)[0], s = PyArray_STRIDES(y)[0];
    int met = 1;
    int const chain = (npy_int64)syscall(SYS_gettid) != state[0];
    // Its slot in the log, taken on the way in: the call that waits logs its interval even
    // when the other chain made many calls before it woke up.
    npy_int64 const k = chain ? __atomic_fetch_add(&state[3], 1, __ATOMIC_SEQ_CST) : 16;
    if (chain && !__atomic_load_n(&state[2], __ATOMIC_SEQ_CST)) {
        if (__atomic_add_fetch(&state[1], 1, __ATOMIC_SEQ_CST) >= 2)
            __atomic_store_n(&state[2], 1, __ATOMIC_SEQ_CST);
        struct timespec pause = {0, 1000000};
        for (int i = 0; i < 20000 && !(met = (int)__atomic_load_n(&state[2], __ATOMIC_SEQ_CST)); ++i)
            nanosleep(&pause, NULL);
        if (!met)  // for good: a sampler may carry on past the error, and must not meet later
            __atomic_store_n(&state[2], -1, __ATOMIC_SEQ_CST);
    }
    for (npy_intp i = 0; i < n; ++i) {
        double r = *(DTYPE_INPUT_0*)(PyArray_BYTES(y) + i * s) - m;
        sum += r * r;
    }
    if (!met) {
        PyErr_SetString(PyExc_TimeoutError, "gauss_loglike_meeting: no second thread came");
        return 1;
    }
    if (*logp == NULL) {
        *logp = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (*logp == NULL) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*logp) = -0.5 * sum;
    if (k < 16) {
        state[4 + 2 * k] = start;
        state[5 + 2 * k] = APPLY_SPECIFIC(now)();
    }
    return 0;
}
