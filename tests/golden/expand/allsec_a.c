#section init_code

// Runs once when the module is imported.
allsec_module_ready = 1;

#section support_code

static int allsec_module_ready = 0;

#section init_code_apply

// Runs once per apply when the module is imported.
APPLY_SPECIFIC(ready) = allsec_module_ready;

#section support_code_apply

static int APPLY_SPECIFIC(ready) = 0;

static DTYPE_OUTPUT_0 APPLY_SPECIFIC(combine)(DTYPE_INPUT_0 a, DTYPE_INPUT_1 b, DTYPE_PARAM_k k)
{
    return a * b + k;
}

#section support_code_struct

npy_intp APPLY_SPECIFIC(calls);
double* APPLY_SPECIFIC(scratch);

#section init_code_struct

APPLY_SPECIFIC(calls) = 0;
APPLY_SPECIFIC(scratch) = (double*)malloc(16 * sizeof(double));
if (APPLY_SPECIFIC(scratch) == NULL) {
    PyErr_NoMemory();
    FAIL;
}

#section code

APPLY_SPECIFIC(calls) += 1;
if (PyArray_DIMS(INPUT_0)[0] != PyArray_DIMS(INPUT_1)[0]) {
    PyErr_SetString(PyExc_ValueError, "inputs differ in length");
    FAIL;
}
