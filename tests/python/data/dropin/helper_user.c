#section support_code_apply
// helper_scale and helper_ready come from the op's Python-side c_support_code, HELPER_SCALE
// from its header (found through c_header_dirs) and HELPER_OFFSET from c_compile_args.
int APPLY_SPECIFIC(scaled)(PyArrayObject* x, PyArrayObject** z)
{
    if (!helper_ready) {
        PyErr_SetString(PyExc_RuntimeError, "c_init_code did not run");
        return 1;
    }
    npy_intp n = PyArray_DIMS(x)[0];
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_FLOAT64, 0);
    if (*z == NULL) return 1;
    for (npy_intp i = 0; i < n; ++i)
        *(npy_float64*)PyArray_GETPTR1(*z, i) =
            helper_scale(*(npy_float64*)PyArray_GETPTR1(x, i)) * HELPER_SCALE + HELPER_OFFSET;
    return 0;
}
