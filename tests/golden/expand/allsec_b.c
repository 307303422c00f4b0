#section support_code

// A second support_code block: PyTensor appends it to the first file's.
static int allsec_second_block = 2;

#section code

Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(INPUT_0), TYPENUM_OUTPUT_0, 0);
if (OUTPUT_0 == NULL) FAIL;
for (npy_intp i = 0; i < PyArray_DIMS(INPUT_0)[0]; ++i) {
    *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(OUTPUT_0, i) = APPLY_SPECIFIC(combine)(
        *(DTYPE_INPUT_0*)PyArray_GETPTR1(INPUT_0, i),
        *(DTYPE_INPUT_1*)PyArray_GETPTR1(INPUT_1, i), PARAMS->k);
}

#section code_cleanup

// Runs after code, also when code failed.
APPLY_SPECIFIC(calls) += 0;

#section cleanup_code_struct

free(APPLY_SPECIFIC(scratch));
APPLY_SPECIFIC(scratch) = NULL;
