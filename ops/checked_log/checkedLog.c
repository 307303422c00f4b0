#section support_code

#include <math.h>
#include <stdio.h>

#section support_code_apply

// z = log(x), refusing values the logarithm is not defined for with a clear ValueError that
// names the first bad element.
int APPLY_SPECIFIC(checked_log)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    for (npy_intp i = 0; i < n; ++i) {
        double v = (double)*(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        if (!(v > 0)) {
            char value[32];  // PyErr_Format has no %g
            snprintf(value, sizeof value, "%g", v);
            PyErr_Format(PyExc_ValueError,
                         "checked_log: x[%ld] = %s is not positive; log is undefined there",
                         (long)i, value);
            return 1;
        }
    }
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = log((double)*(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i));
    return 0;
}
