#section support_code_apply

/* z = x * y: a complex vector scaled by a real one, elementwise, through NumPy's complex
   functions (npy_math.h, which PyTensor's tensors include). */
#if ITEMSIZE_INPUT_0 == 16
#define CX_REAL npy_creal
#define CX_IMAG npy_cimag
#define CX_SET_REAL npy_csetreal
#define CX_SET_IMAG npy_csetimag
#else
#define CX_REAL npy_crealf
#define CX_IMAG npy_cimagf
#define CX_SET_REAL npy_csetrealf
#define CX_SET_IMAG npy_csetimagf
#endif

int APPLY_SPECIFIC(complex_scale)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) {
    npy_intp n = PyArray_DIMS(x)[0];
    if (PyArray_DIMS(y)[0] != n) {
        PyErr_SetString(PyExc_ValueError, "complex_scale: x and y differ in length");
        return 1;
    }
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
    if (NULL == *z) return 1;
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 a = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        DTYPE_INPUT_1 b = *(DTYPE_INPUT_1*)PyArray_GETPTR1(y, i);
        DTYPE_OUTPUT_0* out = (DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i);
        CX_SET_REAL(out, CX_REAL(a) * b);
        CX_SET_IMAG(out, CX_IMAG(a) * b);
    }
    return 0;
}

#undef CX_REAL
#undef CX_IMAG
#undef CX_SET_REAL
#undef CX_SET_IMAG
