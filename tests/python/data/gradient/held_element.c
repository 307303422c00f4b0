#section support_code_apply

// The sum of squares, each element read into a plain double: fine for the op, but it hides the
// values from their derivatives, so the derived gradient's build says where and what to write.
int APPLY_SPECIFIC(sum_squares)(PyArrayObject* x, PyArrayObject** z)
{
    DTYPE_OUTPUT_0 total = 0;
    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i) {
        double v = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        total += v * v;
    }
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = total;
    return 0;
}
