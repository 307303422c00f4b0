#section support_code_struct

// sum_i x_i**2 * exp(x_(i-1)) (x_(-1) = 0), with a memo of the last input and result in the
// op's struct: a call with the same values returns the memo. Right in the op's own module; a
// derived gradient's passes run on the same values, so each must start from a fresh struct.
DTYPE_INPUT_0* APPLY_SPECIFIC(last_x);
npy_intp APPLY_SPECIFIC(last_n);
DTYPE_OUTPUT_0 APPLY_SPECIFIC(last_result);

int APPLY_SPECIFIC(memo_sum)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    int same = APPLY_SPECIFIC(last_x) != NULL && APPLY_SPECIFIC(last_n) == n;
    for (npy_intp i = 0; same && i < n; ++i)
        same = APPLY_SPECIFIC(last_x)[i] == *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
    if (!same) {
        DTYPE_INPUT_0* kept = (DTYPE_INPUT_0*)realloc(APPLY_SPECIFIC(last_x), (n + 1) * sizeof(DTYPE_INPUT_0));
        if (NULL == kept) {
            PyErr_NoMemory();
            return 1;
        }
        APPLY_SPECIFIC(last_x) = kept;
        APPLY_SPECIFIC(last_n) = n;
        DTYPE_OUTPUT_0 total = 0;
        DTYPE_INPUT_0 previous = 0;
        for (npy_intp i = 0; i < n; ++i) {
            DTYPE_INPUT_0 xi = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
            total += xi * xi * exp(previous);
            previous = xi;
            kept[i] = xi;
        }
        APPLY_SPECIFIC(last_result) = total;
    }
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = APPLY_SPECIFIC(last_result);
    return 0;
}

#section init_code_struct

APPLY_SPECIFIC(last_x) = NULL;
APPLY_SPECIFIC(last_n) = 0;

#section cleanup_code_struct

free(APPLY_SPECIFIC(last_x));
