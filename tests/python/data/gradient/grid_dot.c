#section support_code_apply

// sum_i x_i * t_i with x through its DTYPE macro and the time grid t through a plain double:
// derivatives in x are derived, t stays a plain array.
int APPLY_SPECIFIC(dot_grid)(PyArrayObject* x, PyArrayObject* t, PyArrayObject** z)
{
    double const* ts = (double const*)PyArray_DATA(t);
    DTYPE_OUTPUT_0 total = 0;
    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i)
        total += *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i) * ts[i];
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = total;
    return 0;
}
