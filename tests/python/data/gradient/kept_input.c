#section support_code_apply

// sum(x) plus the sum of the previous call's input, read from that input's array, which a
// static variable keeps a reference to (state outside the op's struct, as a cache of arrays
// is). The array it keeps is its own: no later call may write into it.
static PyArrayObject* APPLY_SPECIFIC(previous) = NULL;

int APPLY_SPECIFIC(with_previous)(PyArrayObject* x, PyArrayObject** z)
{
    DTYPE_OUTPUT_0 total = 0;
    for (npy_intp i = 0; i < PyArray_DIMS(x)[0]; ++i)
        total += *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
    PyArrayObject* kept = APPLY_SPECIFIC(previous);
    for (npy_intp i = 0; kept && i < PyArray_DIMS(kept)[0]; ++i)
        total += *(DTYPE_INPUT_0*)PyArray_GETPTR1(kept, i);
    Py_XDECREF(kept);
    Py_INCREF(x);
    APPLY_SPECIFIC(previous) = x;
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = total;
    return 0;
}
