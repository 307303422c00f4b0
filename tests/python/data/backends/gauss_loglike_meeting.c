#section support_code_apply
// GaussLogLike (gauss_loglike.c) whose first calls from two threads other than the test's meet
// inside the op: state (int64[3], passed by its address) is [the test thread's id, calls
// waiting, 1 once two met or -1 once one gave up]. A call from another thread, before they
// met, waits there with the GIL released until a second one arrives: calls of one function
// from several threads (nutpie's chains) run at once, or fail (a hang guard gives up after a
// minute, and no call waits after that).
int APPLY_SPECIFIC(gauss_loglike_meeting)(PyArrayObject* y, PyArrayObject* mu,
                                          PyArrayObject* address, PyArrayObject** logp)
{
    npy_int64* state = (npy_int64*)(npy_intp) * (npy_int64*)PyArray_DATA(address);
    double m = *(DTYPE_INPUT_1*)PyArray_DATA(mu), sum = 0;
    npy_intp n = PyArray_DIMS(y)[0], s = PyArray_STRIDES(y)[0];
    int met = 1;
    Py_BEGIN_ALLOW_THREADS
    if ((npy_int64)syscall(SYS_gettid) != state[0] && !__atomic_load_n(&state[2], __ATOMIC_SEQ_CST)) {
        if (__atomic_add_fetch(&state[1], 1, __ATOMIC_SEQ_CST) >= 2)
            __atomic_store_n(&state[2], 1, __ATOMIC_SEQ_CST);
        struct timespec pause = {0, 1000000};
        for (int i = 0; i < 60000 && !(met = (int)__atomic_load_n(&state[2], __ATOMIC_SEQ_CST)); ++i)
            nanosleep(&pause, NULL);
        if (!met)  // for good: a sampler may carry on past the error, and must not meet later
            __atomic_store_n(&state[2], -1, __ATOMIC_SEQ_CST);
    }
    for (npy_intp i = 0; i < n; ++i) {
        double r = *(DTYPE_INPUT_0*)(PyArray_BYTES(y) + i * s) - m;
        sum += r * r;
    }
    Py_END_ALLOW_THREADS
    if (!met) {
        PyErr_SetString(PyExc_TimeoutError, "gauss_loglike_meeting: no second thread came");
        return 1;
    }
    if (*logp == NULL) {
        *logp = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (*logp == NULL) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*logp) = -0.5 * sum;
    return 0;
}
