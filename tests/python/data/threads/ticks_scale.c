#section support_code_apply
// y = 2 * x[0] (x and the ticker's address: arrays of one element), which a derived gradient runs on dual numbers; each call logs in ticks[1 + k]
// whether Python ran in another thread meanwhile (ticks.c's ticker, waited for up to a minute).
int APPLY_SPECIFIC(ticks_scale)(PyArrayObject* x, PyArrayObject* address, PyArrayObject** y)
{
    npy_int64* ticks = (npy_int64*)(npy_intp) * (npy_int64*)PyArray_DATA(address);
    npy_int64 const moved = ticks_seen(ticks, (npy_int64)60000000000);
    npy_int64 const k = __atomic_fetch_add(&ticks[8], 1, __ATOMIC_SEQ_CST);
    if (k < 7) ticks[1 + k] = moved;
    if (*y == NULL) {
        *y = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (*y == NULL) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*y) = 2 * *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, 0);
    return 0;
}
