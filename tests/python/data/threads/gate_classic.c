#section support_code
// The Gate op (data/backends/gate.c) as PyTensor users write an op: no Py_BEGIN_ALLOW_THREADS,
// its output allocated with NumPy in the op's code. Each call arrives (counts itself in
// gate[0]) and waits until the test sets gate[1]; calls inside at once are seen there only if
// the linker runs the op's code without the GIL. Each call also logs, from inside its C code,
// when it started and ended (CLOCK_MONOTONIC, in ns): gate[3] counts the calls, and call k
// writes gate[4 + 2k] and gate[5 + 2k] (the first 16 calls).
//
// The module's instances are counted (made, alive), each has its own id, and a new instance
// is refused while a call that arrived with gate[2] set is inside: what the tests see of spares.
static npy_int64 libsection_gate_made = 0;
static npy_int64 libsection_gate_alive = 0;
static int libsection_gate_refuse = 0;

static npy_int64 gate_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (npy_int64)t.tv_sec * 1000000000 + t.tv_nsec;
}

#section support_code_struct
npy_int64 APPLY_SPECIFIC(id);

int APPLY_SPECIFIC(gate)(PyArrayObject* address, PyArrayObject** out)
{
    npy_int64 const start = gate_now();
    npy_intp three = 3;
    npy_int64* gate = (npy_int64*)(npy_intp) * (npy_int64*)PyArray_DATA(address);
    Py_XDECREF(*out);
    *out = (PyArrayObject*)PyArray_EMPTY(1, &three, NPY_INT64, 0);
    if (*out == NULL) return 1;
    libsection_gate_refuse = gate[2] != 0;
    int open = 0;
    __atomic_add_fetch(&gate[0], 1, __ATOMIC_SEQ_CST);
    // A hang guard, not a measure: a gate the test never opens fails the call after 20 s.
    struct timespec pause = {0, 1000000};
    for (int i = 0; i < 20000 && !(open = __atomic_load_n(&gate[1], __ATOMIC_SEQ_CST)); ++i)
        nanosleep(&pause, NULL);
    libsection_gate_refuse = 0;  // only while a refusing call is inside
    if (!open) {
        PyErr_SetString(PyExc_TimeoutError, "gate: the test never opened the gate");
        return 1;
    }
    npy_int64* o = (npy_int64*)PyArray_DATA(*out);
    o[0] = APPLY_SPECIFIC(id);
    o[1] = libsection_gate_made;
    o[2] = libsection_gate_alive;
    npy_int64 const k = __atomic_fetch_add(&gate[3], 1, __ATOMIC_SEQ_CST);
    if (k < 16) {
        gate[4 + 2 * k] = start;
        gate[5 + 2 * k] = gate_now();
    }
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
