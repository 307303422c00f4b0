#section support_code_apply

// log(sum_i w_i exp(x_i)), stable: the largest x_i taken out first; an empty x gives -inf.
// x is read through PyArray_FROM_OTF (any strides), w element by element.
int APPLY_SPECIFIC(weighted_logsumexp)(PyArrayObject* x, PyArrayObject* w, PyArrayObject** out)
{
    npy_intp n = PyArray_SIZE(x);
    if (PyArray_NDIM(x) != 1 || PyArray_NDIM(w) != 1 || PyArray_SIZE(w) != n) {
        PyErr_SetString(PyExc_ValueError, "weighted_logsumexp: x and w are vectors of one size");
        return 1;
    }
    PyArrayObject* xc = (PyArrayObject*)PyArray_FROM_OTF((PyObject*)x, TYPENUM_INPUT_0,
                                                         NPY_ARRAY_IN_ARRAY);
    if (NULL == xc) return 1;
    DTYPE_INPUT_0 const* xv = (DTYPE_INPUT_0 const*)PyArray_DATA(xc);
    DTYPE_OUTPUT_0 result = -INFINITY;
    if (n > 0) {
        DTYPE_INPUT_0 top = xv[0];
        for (npy_intp i = 1; i < n; ++i)
            if (xv[i] > top) top = xv[i];
        DTYPE_OUTPUT_0 total = 0;
        for (npy_intp i = 0; i < n; ++i)
            total += *(DTYPE_INPUT_1*)PyArray_GETPTR1(w, i) * exp(xv[i] - top);
        result = top + log(total);
    }
    Py_DECREF(xc);
    if (NULL == *out) {
        *out = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
        if (NULL == *out) return 1;
    }
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*out) = result;
    return 0;
}
