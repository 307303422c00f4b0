#section code

/* z = 2 x on a number (PyTensor's scalar, or a NumPy number standalone). */
OUTPUT_0 = 2 * INPUT_0;
