#section support_code
// Whether Python ran in another thread while this op's code ran: the test's ticker thread
// counts in ticks[0] (an int64 array the test holds, passed by its address) for as long as the
// test runs, which it can only do while this thread does not hold the GIL. `ticks_seen` waits
// for a tick up to `wait_ns` nanoseconds: 1 if it saw one, 0 if not, read inside the C code.
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
