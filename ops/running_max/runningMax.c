#section support_code_struct

// Running maximum of a vector, computed in a scratch buffer kept in the op's struct: it is
// allocated once in init_code_struct, grown when a longer input comes, freed in cleanup.
double* APPLY_SPECIFIC(scratch);
npy_intp APPLY_SPECIFIC(capacity);

int APPLY_SPECIFIC(running_max)(PyArrayObject* x, PyArrayObject** z)
{
    npy_intp n = PyArray_DIMS(x)[0];
    if (n > APPLY_SPECIFIC(capacity)) {
        double* grown = (double*)realloc(APPLY_SPECIFIC(scratch), n * sizeof(double));
        if (NULL == grown) {
            PyErr_NoMemory();
            return 1;
        }
        APPLY_SPECIFIC(scratch) = grown;
        APPLY_SPECIFIC(capacity) = n;
    }
    double best = 0;
    for (npy_intp i = 0; i < n; ++i) {
        double v = (double)*(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i);
        best = (i == 0 || v > best) ? v : best;
        APPLY_SPECIFIC(scratch)[i] = best;
    }
    if (NULL == *z || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (NULL == *z) return 1;
    }
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = (DTYPE_OUTPUT_0)APPLY_SPECIFIC(scratch)[i];
    return 0;
}

#section init_code_struct

APPLY_SPECIFIC(capacity) = 16;
APPLY_SPECIFIC(scratch) = (double*)malloc(APPLY_SPECIFIC(capacity) * sizeof(double));
if (NULL == APPLY_SPECIFIC(scratch)) {
    PyErr_NoMemory();
    FAIL;
}

#section cleanup_code_struct

free(APPLY_SPECIFIC(scratch));
APPLY_SPECIFIC(scratch) = NULL;
APPLY_SPECIFIC(capacity) = 0;
