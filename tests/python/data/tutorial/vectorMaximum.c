#section support_code

// Support code function
bool vector_same_length(PyArrayObject* arr1, PyArrayObject* arr2)
{
    return (PyArray_DIMS(arr1)[0] == PyArray_DIMS(arr2)[0]);
}


#section support_code_apply

// Apply-specific support function: z[i] = max(x[i], y[i]), strides in elements
void APPLY_SPECIFIC(vector_elemwise_max)(
    DTYPE_INPUT_0* x_ptr, npy_intp x_str,
    DTYPE_INPUT_1* y_ptr, npy_intp y_str,
    DTYPE_OUTPUT_0* z_ptr, npy_intp z_str, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) {
        DTYPE_OUTPUT_0 x = x_ptr[i * x_str], y = y_ptr[i * y_str];
        z_ptr[i * z_str] = x < y ? y : x;
    }
}

// Apply-specific main function
int APPLY_SPECIFIC(vector_maximum)(PyArrayObject* input0,
                                   PyArrayObject* input1,
                                   PyArrayObject** output0)
{
    // Validate that the inputs have the same length
    if (!vector_same_length(input0, input1))
    {
        PyErr_Format(PyExc_ValueError, "Shape mismatch: "
                     "x.shape[0] == %ld and y.shape[0] == %ld should match",
                     (long)PyArray_DIMS(input0)[0], (long)PyArray_DIMS(input1)[0]);
        return 1;
    }

    // Reuse the output storage only when it exists and has x's length
    if (NULL == *output0 || !vector_same_length(input0, *output0))
    {
        Py_XDECREF(*output0);
        *output0 = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(input0),
                                                 TYPENUM_OUTPUT_0, 0);
        if (!*output0) {
            PyErr_Format(PyExc_ValueError, "Could not allocate output storage");
            return 1;
        }
    }

    APPLY_SPECIFIC(vector_elemwise_max)(
        (DTYPE_INPUT_0*)PyArray_DATA(input0),
        PyArray_STRIDES(input0)[0] / ITEMSIZE_INPUT_0,
        (DTYPE_INPUT_1*)PyArray_DATA(input1),
        PyArray_STRIDES(input1)[0] / ITEMSIZE_INPUT_1,
        (DTYPE_OUTPUT_0*)PyArray_DATA(*output0),
        PyArray_STRIDES(*output0)[0] / ITEMSIZE_OUTPUT_0,
        PyArray_DIMS(input0)[0]);

    return 0;
}
