#section support_code_apply
// Wrong on purpose, for tests/python/test_memcheck.py: it never frees its scratch buffer and
// reads one element past its end, so the test shows memcheck sees both inside an op module.
int APPLY_SPECIFIC(leaky_sum)(PyArrayObject* x, DTYPE_OUTPUT_0* out)
{
    npy_intp const n = PyArray_DIMS(x)[0];
    volatile double* scratch = (volatile double*)malloc((size_t)n * sizeof(double));
    if (scratch == NULL) {
        PyErr_NoMemory();
        return 1;
    }
    double total = 0;
    for (npy_intp i = 0; i < n; ++i) {
        scratch[i] = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        total += scratch[i];
    }
    double const past_the_end = scratch[n];
    (void)past_the_end;
    *out = total;
    return 0;
}
