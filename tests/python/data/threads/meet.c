#section support_code_struct
// An op that allocates, raises, keeps struct state and calls NumPy's functions, written as
// users write it (no Py_BEGIN_ALLOW_THREADS), whose calls wait at a gate the test opens
// (gate_classic.c's: [arrived, open, refuse, calls, (start, end) per call]): z = x * sum(x)
// (NumPy's PyArray_Sum), z[0] then the number of calls its instance made (its struct's state);
// x[0] < 0 raises ValueError, after the gate.
npy_int64 APPLY_SPECIFIC(calls);

static npy_int64 APPLY_SPECIFIC(now)(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (npy_int64)t.tv_sec * 1000000000 + t.tv_nsec;
}

int APPLY_SPECIFIC(meet)(PyArrayObject* x, PyArrayObject* address, PyArrayObject** z)
{
    npy_int64 const start = APPLY_SPECIFIC(now)();
    npy_int64* gate = (npy_int64*)(npy_intp) * (npy_int64*)PyArray_DATA(address);
    int open = 0;
    __atomic_add_fetch(&gate[0], 1, __ATOMIC_SEQ_CST);
    struct timespec pause = {0, 1000000};
    for (int i = 0; i < 20000 && !(open = __atomic_load_n(&gate[1], __ATOMIC_SEQ_CST)); ++i)
        nanosleep(&pause, NULL);
    if (!open) {
        PyErr_SetString(PyExc_TimeoutError, "meet: the test never opened the gate");
        return 1;
    }
    ++APPLY_SPECIFIC(calls);
    npy_intp const n = PyArray_DIMS(x)[0];
    if (n == 0 || *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, 0) < 0) {
        PyErr_Format(PyExc_ValueError, "meet: x[0] is negative (call %ld of this instance)",
                     (long)APPLY_SPECIFIC(calls));
        return 1;
    }
    PyObject* total = PyArray_Sum(x, 0, NPY_FLOAT64, NULL);
    if (total == NULL) return 1;
    double const sum = PyFloat_AsDouble(total);
    Py_DECREF(total);
    if (sum == -1 && PyErr_Occurred()) return 1;
    if (*z == NULL || PyArray_DIMS(*z)[0] != n) {
        Py_XDECREF(*z);
        *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
        if (*z == NULL) return 1;
    }
    for (npy_intp i = 0; i < n; ++i)
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, i) = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, i) * sum;
    *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, 0) = (DTYPE_OUTPUT_0)APPLY_SPECIFIC(calls);
    npy_int64 const k = __atomic_fetch_add(&gate[3], 1, __ATOMIC_SEQ_CST);
    if (k < 16) {
        gate[4 + 2 * k] = start;
        gate[5 + 2 * k] = APPLY_SPECIFIC(now)();
    }
    return 0;
}

#section init_code_struct
APPLY_SPECIFIC(calls) = 0;
