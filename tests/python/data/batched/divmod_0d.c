#section support_code_apply

/* q, r = divmod(x, y) on 0-d arrays: one number each, two outputs. */
int APPLY_SPECIFIC(divmod_0d)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** q,
                              PyArrayObject** r) {
    DTYPE_INPUT_0 const a = *(DTYPE_INPUT_0*)PyArray_DATA(x);
    DTYPE_INPUT_1 const b = *(DTYPE_INPUT_1*)PyArray_DATA(y);
    Py_XDECREF(*q);
    Py_XDECREF(*r);
    *q = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
    *r = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_1, 0);
    if (NULL == *q || NULL == *r) return 1;
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*q) = floor(a / b);
    *(DTYPE_OUTPUT_1*)PyArray_DATA(*r) = a - b * floor(a / b);
    return 0;
}
