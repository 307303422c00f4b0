#section support_code_apply

// sum_i x_i * t_i with x read through a plain double: its derivative cannot be taken this way.
// t (a time grid, say) is read as double too, which is fine while t carries no derivative.
int APPLY_SPECIFIC(dot_grid)(PyArrayObject* x, PyArrayObject* t, PyArrayObject** z)
{
    double* xs = (double*)PyArray_DATA(x);
    double* ts = (double*)PyArray_DATA(t);
    DTYPE_OUTPUT_0 total = 0;
    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i) total += xs[i] * ts[i];
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = total;
    return 0;
}
