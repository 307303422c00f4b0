#section support_code_apply

// sum_i x_i**2 with a memo of the last input and result in static variables (state outside
// the op's struct, which a derived gradient cannot start afresh): a call with the same values
// returns the memo. Right in the op's own module; in a derived gradient's module the memo
// holds a number of an earlier call, whose derivative is not this call's.
static DTYPE_INPUT_0 APPLY_SPECIFIC(last_x)[64];
static npy_intp APPLY_SPECIFIC(last_n) = -1;
static DTYPE_OUTPUT_0 APPLY_SPECIFIC(last_result);

int APPLY_SPECIFIC(memo_squares)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (n > 64) {
        PyErr_SetString(PyExc_ValueError, "memo_squares: at most 64 elements");
        return 1;
    }
    int same = APPLY_SPECIFIC(last_n) == n;
    for (npy_intp i = 0; same && i < n; ++i)
        same = APPLY_SPECIFIC(last_x)[i] == *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
    if (!same) {
        DTYPE_OUTPUT_0 total = 0;
        for (npy_intp i = 0; i < n; ++i) {
            DTYPE_INPUT_0 xi = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
            total += xi * xi;
            APPLY_SPECIFIC(last_x)[i] = xi;
        }
        APPLY_SPECIFIC(last_n) = n;
        APPLY_SPECIFIC(last_result) = total;
    }
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = APPLY_SPECIFIC(last_result);
    return 0;
}
