#section support_code_apply

// y_i = f(x_i) for the function numbered `which` (an integer): sqrt, pow(x, 0.5), cbrt, asin, atan2(x, x):
// each with an infinite (or undefined) slope at one point, which must not reach the
// derivatives of the other elements.
int APPLY_SPECIFIC(slopes)(PyArrayObject* x, PyArrayObject* which_array, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    npy_int64 which = *(DTYPE_INPUT_1*)PyArray_DATA(which_array);
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 v = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        DTYPE_OUTPUT_0 y;
        switch (which) {
            case 0: y = sqrt(v); break;
            case 1: y = pow(v, 0.5); break;
            case 2: y = cbrt(v); break;
            case 3: y = asin(v); break;
            default: y = atan2(v, v); break;
        }
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = y;
    }
    return 0;
}
