#section support_code
// Two outputs from a `code` section (no main function): the sum and the difference.

#section code
// As in PyTensor, FAIL jumps to the end of this block: declare locals before the first FAIL.
npy_intp n = PyArray_DIMS(INPUT_0)[0];
if (PyArray_DIMS(INPUT_1)[0] != n) {
    PyErr_SetString(PyExc_ValueError, "sum_diff: inputs differ in length");
    FAIL;
}
Py_XDECREF(OUTPUT_0);
Py_XDECREF(OUTPUT_1);
OUTPUT_0 = (PyArrayObject*)PyArray_EMPTY(1, &n, TYPENUM_OUTPUT_0, 0);
OUTPUT_1 = (PyArrayObject*)PyArray_EMPTY(1, &n, TYPENUM_OUTPUT_1, 0);
if (!OUTPUT_0 || !OUTPUT_1) FAIL;
for (npy_intp i = 0; i < n; ++i) {
    DTYPE_INPUT_0 a = *(DTYPE_INPUT_0*)PyArray_GETPTR1(INPUT_0, i);
    DTYPE_INPUT_1 b = *(DTYPE_INPUT_1*)PyArray_GETPTR1(INPUT_1, i);
    ((DTYPE_OUTPUT_0*)PyArray_DATA(OUTPUT_0))[i] = a + b;
    ((DTYPE_OUTPUT_1*)PyArray_DATA(OUTPUT_1))[i] = a - b;
}
