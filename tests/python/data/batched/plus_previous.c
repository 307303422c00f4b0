#section support_code_struct
PyArrayObject* APPLY_SPECIFIC(previous);

#section init_code_struct
APPLY_SPECIFIC(previous) = NULL;

#section cleanup_code_struct
Py_XDECREF(APPLY_SPECIFIC(previous));

#section support_code_apply
// z = x + the x of the instance's previous call (zeros on its first): the struct keeps a
// reference to its input, as an op caching its inputs would. A call whose x[0] is negative
// keeps its input and then fails: the kept array outlives a failed call.
int APPLY_SPECIFIC(plus_previous)(PyArrayObject* x, PyArrayObject** z, PyArrayObject** previous)
{
    npy_intp const n = PyArray_DIMS(x)[0];
    if (*previous != NULL && PyArray_DIMS(*previous)[0] != n) {
        PyErr_SetString(PyExc_ValueError, "plus_previous: the length changed");
        return 1;
    }
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 before = *previous ? *(DTYPE_INPUT_0*)PyArray_GETPTR1(*previous, i) : 0;
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i) + before;
    }
    Py_XDECREF(*previous);
    Py_INCREF(x);
    *previous = x;
    if (n > 0 && *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, 0) < 0) {
        PyErr_SetString(PyExc_ArithmeticError, "plus_previous: x[0] is negative");
        return 1;
    }
    return 0;
}

#section code
if (APPLY_SPECIFIC(plus_previous)(INPUT_0, &OUTPUT_0, &APPLY_SPECIFIC(previous)) != 0) FAIL;
