#section support_code_apply

// The sum of squares in C (the op is declared C): C converts PyArray_DATA's void* implicitly,
// which the C++ of the derived gradient's module does not.
int APPLY_SPECIFIC(sum_squares)(PyArrayObject* x, PyArrayObject** z)
{
    DTYPE_INPUT_0* v = PyArray_DATA(x);
    DTYPE_OUTPUT_0 total = 0;
    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i) total += v[i] * v[i];
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = total;
    return 0;
}
