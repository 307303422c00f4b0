#section support_code_apply

// z = x * y elementwise for two arrays of one shape, whatever their number of dimensions: the
// op takes a whole batch in one call (its class says vmap_method = "broadcast_all").
int APPLY_SPECIFIC(batch_times_batch)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z)
{
    int const nd = PyArray_NDIM(x);
    if (PyArray_NDIM(y) != nd || !PyArray_CompareLists(PyArray_DIMS(x), PyArray_DIMS(y), nd)) {
        PyErr_SetString(PyExc_ValueError, "batch_times_batch: x and y differ in shape");
        return 1;
    }
    if (NULL == *z || PyArray_NDIM(*z) != nd || !PyArray_IS_C_CONTIGUOUS(*z) ||
        !PyArray_CompareLists(PyArray_DIMS(*z), PyArray_DIMS(x), nd)) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(nd, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    // Inputs broadcast along a batch dimension (a stride of 0) or strided are made contiguous.
    PyArrayObject* cx = (PyArrayObject*)PyArray_GETCONTIGUOUS(x);
    PyArrayObject* cy = cx ? (PyArrayObject*)PyArray_GETCONTIGUOUS(y) : NULL;
    if (NULL == cy) {
        Py_XDECREF(cx);
        return 1;
    }
    npy_intp const n = PyArray_SIZE(x);
    DTYPE_INPUT_0 const* px = (DTYPE_INPUT_0 const*)PyArray_DATA(cx);
    DTYPE_INPUT_1 const* py = (DTYPE_INPUT_1 const*)PyArray_DATA(cy);
    DTYPE_OUTPUT_0* pz = (DTYPE_OUTPUT_0*)PyArray_DATA(*z);
    for (npy_intp i = 0; i < n; ++i) pz[i] = px[i] * py[i];
    Py_DECREF(cx);
    Py_DECREF(cy);
    return 0;
}
