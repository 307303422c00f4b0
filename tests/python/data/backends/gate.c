#section support_code
// A gate the test opens: each call arrives (counts itself in gate[0]) and waits, with the GIL
// released, until the test sets gate[1]. The gate is an int64 array the test holds, passed by
// its address, so every backend (JAX copies its inputs) reaches the same memory. Calls that
// are inside at once are seen there, without timing anything.
//
// The module's instances are counted (made, alive), each has its own id, and a new instance
// is refused while a call that arrived with gate[2] set is inside: what the tests see of spares.
static npy_int64 libsection_gate_made = 0;
static npy_int64 libsection_gate_alive = 0;
static int libsection_gate_refuse = 0;

#section support_code_struct
npy_int64 APPLY_SPECIFIC(id);

int APPLY_SPECIFIC(gate)(PyArrayObject* address, PyArrayObject** out)
{
    npy_intp three = 3;
    npy_int64* gate = (npy_int64*)(npy_intp) * (npy_int64*)PyArray_DATA(address);
    Py_XDECREF(*out);
    *out = (PyArrayObject*)PyArray_EMPTY(1, &three, NPY_INT64, 0);
    if (*out == NULL) return 1;
    libsection_gate_refuse = gate[2] != 0;
    int open = 0;
    Py_BEGIN_ALLOW_THREADS
    __atomic_add_fetch(&gate[0], 1, __ATOMIC_SEQ_CST);
    // A hang guard, not a measure: a gate the test never opens fails the call after a minute.
    struct timespec pause = {0, 1000000};
    for (int i = 0; i < 60000 && !(open = __atomic_load_n(&gate[1], __ATOMIC_SEQ_CST)); ++i)
        nanosleep(&pause, NULL);
    Py_END_ALLOW_THREADS
    libsection_gate_refuse = 0;  // only while a refusing call is inside
    if (!open) {
        PyErr_SetString(PyExc_TimeoutError, "gate: the test never opened the gate");
        return 1;
    }
    npy_int64* o = (npy_int64*)PyArray_DATA(*out);
    o[0] = APPLY_SPECIFIC(id);
    o[1] = libsection_gate_made;
    o[2] = libsection_gate_alive;
    return 0;
}

#section init_code_struct
if (libsection_gate_refuse) {
    PyErr_SetString(PyExc_RuntimeError, "gate: no new instance while refused");
    FAIL;
}
APPLY_SPECIFIC(id) = ++libsection_gate_made;
++libsection_gate_alive;

#section cleanup_code_struct
// Also run after a failed init, on the zeroed members init did not reach (PyTensor's contract).
if (APPLY_SPECIFIC(id)) --libsection_gate_alive;
