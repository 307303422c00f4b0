#section support_code_struct

// a * x, and the calls this instance of the op has run since its struct was made. The struct
// lives as long as the compiled function's node, so the count goes 1, 2, 3, ...
long APPLY_SPECIFIC(calls);

int APPLY_SPECIFIC(counted)(PyArrayObject* x, DTYPE_INPUT_1 a, PyArrayObject** y,
                            PyArrayObject** calls)
{
    npy_intp n = PyArray_DIMS(x)[0];
    ++APPLY_SPECIFIC(calls);
    if (NULL == *y || PyArray_DIMS(*y)[0] != n) {
        Py_XDECREF(*y);
        *y = (PyArrayObject*)PyArray_EMPTY(1, &n, TYPENUM_OUTPUT_0, 0);
        if (NULL == *y) return 1;
    }
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*y, i) = a * *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
    if (NULL == *calls) {
        *calls = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_1, 0);
        if (NULL == *calls) return 1;
    }
    *(DTYPE_OUTPUT_1*)PyArray_DATA(*calls) = APPLY_SPECIFIC(calls);
    return 0;
}

#section init_code_struct

APPLY_SPECIFIC(calls) = 0;
