#section support_code
// Whether Python ran in another thread while this op's code ran: the test's ticker thread
// counts in ticks[0] (an int64 array the test holds, passed by its address) for as long as the
// test runs, which it can only do while this thread does not hold the GIL. The op waits for a
// tick up to `wait_ns` nanoseconds, then returns 1 if it saw one, 0 if not, and logs it in
// ticks[1 + k] for its k-th call (the first 8). The answer is read inside the C code.
static npy_int64 ticks_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (npy_int64)t.tv_sec * 1000000000 + t.tv_nsec;
}

static npy_int64 ticks_seen(npy_int64* ticks, npy_int64 wait_ns)
{
    npy_int64 const first = __atomic_load_n(&ticks[0], __ATOMIC_SEQ_CST);
    npy_int64 const start = ticks_now();
    struct timespec pause = {0, 100000};
    while (__atomic_load_n(&ticks[0], __ATOMIC_SEQ_CST) == first) {
        if (ticks_now() - start >= wait_ns) return 0;
        nanosleep(&pause, NULL);
    }
    return 1;
}

#section support_code_apply
int APPLY_SPECIFIC(ticks)(PyArrayObject* address, PyArrayObject* wait_ns, PyArrayObject** seen)
{
    npy_int64* ticks = (npy_int64*)(npy_intp) * (npy_int64*)PyArray_DATA(address);
    npy_int64 const moved = ticks_seen(ticks, *(npy_int64*)PyArray_DATA(wait_ns));
    if (*seen == NULL) {
        *seen = (PyArrayObject*)PyArray_EMPTY(0, NULL, NPY_INT64, 0);
        if (*seen == NULL) return 1;
    }
    *(npy_int64*)PyArray_DATA(*seen) = MOVED(moved);
    return 0;
}
