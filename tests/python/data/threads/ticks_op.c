#section support_code_apply
// (ticker address, ns to wait) -> whether Python ran in another thread meanwhile (ticks.c),
// through MOVED (ticks_plain.c, or ticks_unclassified.c's function pointer).
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
