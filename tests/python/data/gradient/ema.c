#section support_code

// Module-wide helpers know no DTYPE (SL303): integers only here.
static npy_intp ema_capacity_for(npy_intp n)
{
    npy_intp capacity = 16;
    while (capacity < n) capacity *= 2;
    return capacity;
}

#section support_code_apply

static DTYPE_OUTPUT_0 APPLY_SPECIFIC(blend)(DTYPE_OUTPUT_0 previous, DTYPE_INPUT_0 x,
                                            DTYPE_INPUT_1 a)
{
    return a * previous + (1.0 - a) * x;
}

#section support_code_struct

// The exponential moving average s_0 = x_0, s_i = a s_(i-1) + (1 - a) x_i, kept in a buffer of
// the op's struct (grown as needed, freed in cleanup), with a count of calls.
DTYPE_OUTPUT_0* APPLY_SPECIFIC(buffer);
npy_intp APPLY_SPECIFIC(capacity);
long APPLY_SPECIFIC(calls);

int APPLY_SPECIFIC(ema)(PyArrayObject* x, DTYPE_INPUT_1 a, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    ++APPLY_SPECIFIC(calls);
    if (n > APPLY_SPECIFIC(capacity)) {
        npy_intp capacity = ema_capacity_for(n);
        DTYPE_OUTPUT_0* grown = (DTYPE_OUTPUT_0*)realloc(APPLY_SPECIFIC(buffer),
                                                         capacity * sizeof(DTYPE_OUTPUT_0));
        if (NULL == grown) {
            PyErr_NoMemory();
            return 1;
        }
        APPLY_SPECIFIC(buffer) = grown;
        APPLY_SPECIFIC(capacity) = capacity;
    }
    DTYPE_OUTPUT_0 s = 0;
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 xi = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        s = i == 0 ? (DTYPE_OUTPUT_0)xi : APPLY_SPECIFIC(blend)(s, xi, a);
        APPLY_SPECIFIC(buffer)[i] = s;
    }
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = APPLY_SPECIFIC(buffer)[i];
    return 0;
}

#section init_code_struct

APPLY_SPECIFIC(buffer) = NULL;
APPLY_SPECIFIC(capacity) = 0;
APPLY_SPECIFIC(calls) = 0;

#section cleanup_code_struct

free(APPLY_SPECIFIC(buffer));
APPLY_SPECIFIC(buffer) = NULL;
