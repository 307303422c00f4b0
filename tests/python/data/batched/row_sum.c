#section code

/* The sum of a vector's elements: a number out. */
{
    npy_intp const n = PyArray_DIMS(INPUT_0)[0];
    double s = 0;
    for (npy_intp i = 0; i < n; ++i) s += *(DTYPE_INPUT_0*)PyArray_GETPTR1(INPUT_0, i);
    OUTPUT_0 = s;
}
