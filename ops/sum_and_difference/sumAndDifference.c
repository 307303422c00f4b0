#section support_code

// Two outputs from one pass: s = x + y and d = x - y.
static int sum_and_difference_same_length(PyArrayObject* x, PyArrayObject* y)
{
    if (PyArray_DIMS(x)[0] != PyArray_DIMS(y)[0]) {
        PyErr_Format(PyExc_ValueError,
                     "sum_and_difference: x and y must have the same length, got %ld and %ld",
                     (long)PyArray_DIMS(x)[0], (long)PyArray_DIMS(y)[0]);
        return 0;
    }
    return 1;
}

static int sum_and_difference_prepare(PyArrayObject** out, PyArrayObject* like, int typenum)
{
    if (NULL != *out && PyArray_DIMS(*out)[0] == PyArray_DIMS(like)[0]) return 1;
    Py_XDECREF(*out);
    *out = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(like), typenum, 0);
    return NULL != *out;
}

#section support_code_apply

int APPLY_SPECIFIC(sum_and_difference)(PyArrayObject* x, PyArrayObject* y,
                                       PyArrayObject** s, PyArrayObject** d)
{
    if (!sum_and_difference_same_length(x, y)) return 1;
    if (!sum_and_difference_prepare(s, x, TYPENUM_OUTPUT_0)) return 1;
    if (!sum_and_difference_prepare(d, x, TYPENUM_OUTPUT_1)) return 1;
    npy_intp n = PyArray_DIMS(x)[0];
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 a = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        DTYPE_INPUT_1 b = *(DTYPE_INPUT_1*)PyArray_GETPTR1(y, i);
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*s, i) = a + b;
        *(DTYPE_OUTPUT_1*)PyArray_GETPTR1(*d, i) = a - b;
    }
    return 0;
}
