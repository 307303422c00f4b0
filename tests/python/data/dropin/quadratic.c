#section support_code_apply
// y = a x^2 + b x + c, with a a 0-d tensor, b a scalar and c any Python number (params).
int APPLY_SPECIFIC(quadratic)(PyArrayObject* x, PyArrayObject** y, PARAMS_TYPE* params)
{
    npy_float64 a = *(npy_float64*)PyArray_DATA(params->a);
    npy_float64 b = params->b;
    double c = PyFloat_AsDouble(params->c);
    if (c == -1.0 && PyErr_Occurred()) return 1;
    npy_intp n = PyArray_DIMS(x)[0];
    Py_XDECREF(*y);
    *y = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);
    if (*y == NULL) return 1;
    for (npy_intp i = 0; i < n; ++i) {
        npy_float64 v = *(npy_float64*)PyArray_GETPTR1(x, i);
        *(npy_float64*)PyArray_GETPTR1(*y, i) = a * v * v + b * v + c;
    }
    return 0;
}
