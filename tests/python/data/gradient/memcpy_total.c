#section code

// The sum of x's squares, a number, from a copy of x made with memcpy of n * sizeof(double):
// right in the op's own module, but on dual numbers it copies a fraction of x's elements (the
// rest of the copy stays 0), so its derived derivatives are refused when they run.
{
    npy_intp n = PyArray_DIMS(INPUT_0)[0];
    DTYPE_INPUT_0* copy = (DTYPE_INPUT_0*)calloc(n > 0 ? n : 1, sizeof(DTYPE_INPUT_0));
    if (NULL == copy) {
        PyErr_NoMemory();
        FAIL;
    }
    memcpy(copy, PyArray_DATA(INPUT_0), n * sizeof(double));
    DTYPE_OUTPUT_0 total = 0;
    for (npy_intp i = 0; i < n; ++i) total += copy[i] * copy[i];
    free(copy);
    OUTPUT_0 = total;
}
