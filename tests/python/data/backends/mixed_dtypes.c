#section support_code_apply
// Three inputs and three outputs of different dtypes: counts (int32 vector), weights (float32
// vector) and a scale (float64 0-d) give the sum of the counts (int64 0-d), the weights times
// the scale (float32 vector) and which weights are positive (bool vector).
int APPLY_SPECIFIC(mixed_dtypes)(PyArrayObject* counts, PyArrayObject* weights,
                                 PyArrayObject* scale, PyArrayObject** total,
                                 PyArrayObject** scaled, PyArrayObject** positive)
{
    npy_intp nc = PyArray_DIMS(counts)[0], sc = PyArray_STRIDES(counts)[0];
    npy_intp nw = PyArray_DIMS(weights)[0], sw = PyArray_STRIDES(weights)[0];
    double k = *(DTYPE_INPUT_2*)PyArray_DATA(scale);
    Py_XDECREF(*total);
    Py_XDECREF(*scaled);
    Py_XDECREF(*positive);
    *total = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
    *scaled = (PyArrayObject*)PyArray_EMPTY(1, &nw, TYPENUM_OUTPUT_1, 0);
    *positive = (PyArrayObject*)PyArray_EMPTY(1, &nw, TYPENUM_OUTPUT_2, 0);
    if (*total == NULL || *scaled == NULL || *positive == NULL) return 1;
    DTYPE_OUTPUT_0 sum = 0;
    for (npy_intp i = 0; i < nc; ++i) sum += *(DTYPE_INPUT_0*)(PyArray_BYTES(counts) + i * sc);
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*total) = sum;
    for (npy_intp i = 0; i < nw; ++i) {
        DTYPE_INPUT_1 w = *(DTYPE_INPUT_1*)(PyArray_BYTES(weights) + i * sw);
        ((DTYPE_OUTPUT_1*)PyArray_DATA(*scaled))[i] = (DTYPE_OUTPUT_1)(w * k);
        ((DTYPE_OUTPUT_2*)PyArray_DATA(*positive))[i] = w > 0;
    }
    return 0;
}
