#section support_code_apply
// z = a copy of x whose data starts one byte past an aligned address (a view of a byte buffer
// it owns): what the C backend's sync must refuse.
int APPLY_SPECIFIC(misaligned_out)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    npy_intp bytes = n * 8 + 1;
    PyArrayObject* raw = (PyArrayObject*)PyArray_ZEROS(1, &bytes, NPY_UINT8, 0);
    if (raw == NULL) return 1;
    PyArrayObject* view = (PyArrayObject*)PyArray_NewFromDescr(
        &PyArray_Type, PyArray_DescrFromType(NPY_FLOAT64), 1, &n, NULL,
        PyArray_BYTES(raw) + 1, NPY_ARRAY_WRITEABLE, NULL);
    if (view == NULL || PyArray_SetBaseObject(view, (PyObject*)raw) < 0) {
        Py_XDECREF(view);
        return 1;
    }
    for (npy_intp i = 0; i < n; ++i) {
        double v = *(npy_float64*)PyArray_GETPTR1(x, i);
        memcpy(PyArray_BYTES(view) + i * 8, &v, 8);
    }
    Py_XDECREF(*z);
    *z = view;
    return 0;
}
