// The runtime: the glue of the built-in types (NumPy arrays and scalars, Python objects) that
// every module used to generate, compiled with the Python package (python/CMakeLists.txt) and
// shared by the modules of a process through the `libsection_runtime` table (declared in the
// prelude). A module keeps only its node table and one call per variable; its compile time no
// longer grows with this code, and no user's first build compiles it.
//
// Each function does what the type's `c_extract`/`c_init`/`c_sync`/`c_cleanup` text does for
// the variable (ctype.cpp), with the same checks, exception types and messages: the array
// checks are the prelude's own functions, the messages come from the node table, which the
// types fill (`CType::runtime_var`).
//
// Not compiled on its own: `runtime_source()` (runtime.cpp) puts the prelude, the ABI version,
// the node table's kinds (LIBSECTION_RT_*), export.h and the batch loop (batch.c) before it.
// Embedded at build time (libsection/embed.cmake), these notes left out.
#define LIBSECTION_OUTLINE_REFS 0
#include <pthread.h>
#include <string.h>

/* A scalar's conversion failed: a TypeError naming what it got. */
static int libsection_rt_type_error(const libsection_var* var, PyObject* py) {
  PyErr_Format(PyExc_TypeError, var->a, Py_TYPE(py)->tp_name);
  return -1;
}

static int libsection_rt_range_error(const libsection_var* var) {
  PyErr_SetString(PyExc_OverflowError, var->b);
  return -1;
}

static void libsection_rt_store_int(void* value, int size, unsigned long long bits) {
  switch (size) {
    case 1: *(npy_uint8*)value = (npy_uint8)bits; break;
    case 2: *(npy_uint16*)value = (npy_uint16)bits; break;
    case 4: *(npy_uint32*)value = (npy_uint32)bits; break;
    default: *(npy_uint64*)value = (npy_uint64)bits; break;
  }
}

/* An array kind's value: `py` itself once `checked` (the kind's check) is 0. */
static int libsection_rt_hold_array(PyObject* py, void* value, int checked) {
  *(PyArrayObject**)value = NULL;
  if (checked) return -1;
  *(PyArrayObject**)value = (PyArrayObject*)py;
  Py_INCREF(py);
  return 0;
}

static int libsection_rt_convert_bool(PyObject* py, void* value, const libsection_var* var) {
  if (py == Py_True || py == Py_False || PyArray_IsScalar(py, Bool)) {
    *(npy_bool*)value = (npy_bool)PyObject_IsTrue(py);
    return 0;
  }
  return libsection_rt_type_error(var, py);
}

/* float32, float64: a finite value a float32 cannot hold is refused; inf and nan pass. */
static int libsection_rt_convert_float(PyObject* py, void* value, const libsection_var* var) {
  double const v = PyFloat_AsDouble(py);
  if (v == -1.0 && PyErr_Occurred()) return libsection_rt_type_error(var, py);
  if (var->n == 4 && v - v == 0 && (v > 3.4028234663852886e+38 || v < -3.4028234663852886e+38))
    return libsection_rt_range_error(var);
  if (var->n == 4) *(npy_float32*)value = (npy_float32)v;
  else *(npy_float64*)value = (npy_float64)v;
  return 0;
}

/* A signed integer of var->n bytes from `index` (a Python int, released here). */
static int libsection_rt_convert_signed(PyObject* index, void* value, const libsection_var* var) {
  int const bits = var->n * 8;
  long long const v = PyLong_AsLongLong(index);
  long long const high = bits == 64 ? (long long)INT64_MAX : (1LL << (bits - 1)) - 1;
  long long const low = bits == 64 ? (long long)INT64_MIN : -(1LL << (bits - 1));
  Py_DECREF(index);
  if ((v == -1 && PyErr_Occurred()) || v < low || v > high) {
    PyErr_Clear();
    return libsection_rt_range_error(var);
  }
  libsection_rt_store_int(value, var->n, (unsigned long long)v);
  return 0;
}

/* An unsigned integer of var->n bytes from `index` (a Python int, released here). */
static int libsection_rt_convert_unsigned(PyObject* index, void* value, const libsection_var* var) {
  int const bits = var->n * 8;
  unsigned long long const v = PyLong_AsUnsignedLongLong(index);
  unsigned long long const high = bits == 64 ? (unsigned long long)UINT64_MAX : (1ULL << bits) - 1;
  Py_DECREF(index);
  if ((v == (unsigned long long)-1 && PyErr_Occurred()) || v > high) {
    PyErr_Clear();
    return libsection_rt_range_error(var);
  }
  libsection_rt_store_int(value, var->n, v);
  return 0;
}

/* The variable's C value from `py` (a new reference the caller holds): 0, or -1 with an
   exception. */
static int libsection_rt_convert(PyObject* py, void* value, const libsection_var* var) {
  PyObject* index;
  switch (var->kind) {
    case LIBSECTION_RT_ARRAY:
      return libsection_rt_hold_array(
          py, value, libsection_check_tensor(py, var->typenum, var->n, var->a, var->b));
    case LIBSECTION_RT_PT_ARRAY:
      return libsection_rt_hold_array(py, value, libsection_pt_extract(py, var->typenum, var->a));
    case LIBSECTION_RT_OBJECT:
    case LIBSECTION_RT_PT_ARRAY_UNCHECKED:
      *(PyObject**)value = py;
      Py_XINCREF(py);
      return 0;
    case LIBSECTION_RT_BOOL: return libsection_rt_convert_bool(py, value, var);
    case LIBSECTION_RT_FLOAT: return libsection_rt_convert_float(py, value, var);
    case LIBSECTION_RT_INT:
    case LIBSECTION_RT_UINT:
      index = PyNumber_Index(py);
      if (!index) return libsection_rt_type_error(var, py);
      return var->kind == LIBSECTION_RT_INT ? libsection_rt_convert_signed(index, value, var)
                                            : libsection_rt_convert_unsigned(index, value, var);
  }
  PyErr_Format(PyExc_SystemError, "libsection runtime: unknown variable kind %d", var->kind);
  return -1;
}

/* c_init */
static void libsection_rt_clear(void* value, const libsection_var* var) {
  if (LIBSECTION_RT_IS_SCALAR(var)) libsection_rt_store_int(value, var->n, 0);
  else *(PyObject**)value = NULL;
}

/* The common case, an array exactly as declared, decided without calls: what the checks of
   the array kinds accept at once (the same type number is an equivalent one). */
static int libsection_rt_as_declared(PyObject* py, const libsection_var* var) {
  PyArrayObject* a = (PyArrayObject*)py;
  if (Py_TYPE(py) != &PyArray_Type || PyArray_TYPE(a) != var->typenum || !PyArray_ISALIGNED(a))
    return 0;
  if (var->kind == LIBSECTION_RT_ARRAY)
    return PyArray_NDIM(a) == var->n && !PyArray_ISBYTESWAPPED(a);
  return var->kind == LIBSECTION_RT_PT_ARRAY;
}

static int libsection_rt_extract(PyObject* cell, PyObject** py, void* value,
                                 const libsection_var* var) {
  PyObject* object = PyList_GET_ITEM(cell, 0);
  Py_INCREF(object);
  *py = object;
  if ((var->kind == LIBSECTION_RT_ARRAY || var->kind == LIBSECTION_RT_PT_ARRAY) &&
      libsection_rt_as_declared(object, var)) {
    Py_INCREF(object);
    *(PyObject**)value = object;
    return 0;
  }
  return libsection_rt_convert(object, value, var);
}

/* An output's cell holds None (the op makes the value) or the previous output (it may reuse). */
static int libsection_rt_extract_output(PyObject* cell, PyObject** py, void* value,
                                        const libsection_var* var) {
  if (PyList_GET_ITEM(cell, 0) == Py_None) {
    *py = Py_None;
    Py_INCREF(Py_None);
    libsection_rt_clear(value, var);
    return 0;
  }
  return libsection_rt_extract(cell, py, value, var);
}

static void libsection_rt_init(PyObject** py, void* value, const libsection_var* var) {
  *py = Py_None;
  Py_INCREF(Py_None);
  libsection_rt_clear(value, var);
}

/* c_sync: `*py` becomes the value's object. */
static int libsection_rt_sync(PyObject** py, void* value, const libsection_var* var) {
  if (var->kind == LIBSECTION_RT_PT_ARRAY || var->kind == LIBSECTION_RT_PT_ARRAY_UNCHECKED)
    return libsection_pt_sync(py, *(PyArrayObject**)value);
  /* A scalar: a NumPy scalar of the exact dtype, as NumPy's reductions return. */
  if (LIBSECTION_RT_IS_SCALAR(var)) {
    PyArray_Descr* descr = PyArray_DescrFromType(var->typenum);
    PyObject* scalar = descr ? PyArray_Scalar(value, descr, NULL) : NULL;
    Py_XDECREF(descr);
    Py_XDECREF(*py);
    if (scalar) {
      *py = scalar;
    } else {
      PyErr_Clear();
      *py = Py_None;
      Py_INCREF(Py_None);
    }
    return 0;
  }
  PyObject* object = *(PyObject**)value;
  if (!object) {
    Py_XDECREF(*py);
    *py = Py_None;
    Py_INCREF(Py_None);
  } else if (object != *py) {
    Py_XDECREF(*py);
    *py = object;
    Py_INCREF(object);
  }
  return 0;
}

/* c_cleanup, and the variable's reference to its object. */
static void libsection_rt_cleanup(PyObject** py, void* value, const libsection_var* var) {
  if (!LIBSECTION_RT_IS_SCALAR(var)) {
    Py_XDECREF(*(PyObject**)value);
    *(PyObject**)value = NULL;
  }
  Py_XDECREF(*py);
}

/* After the op ran (`failed` 0): the output's object goes into its cell; then it is cleaned up
   either way. -1 with an exception when c_sync failed (the cell keeps what it had). */
static int libsection_rt_store_output(PyObject* cell, PyObject** py, void* value,
                                      const libsection_var* var, int failed) {
  int result = 0;
  if (!failed) {
    if (libsection_rt_sync(py, value, var)) {
      result = -1;
    } else {
      PyObject* old = PyList_GET_ITEM(cell, 0);
      Py_INCREF(*py);
      PyList_SET_ITEM(cell, 0, *py);
      Py_XDECREF(old);
    }
  }
  libsection_rt_cleanup(py, value, var);
  return result;
}

#ifdef __cplusplus
static void libsection_rt_set_cxx_error(const char* where) {
  try {
    throw;
  } catch (std::exception const& e) {
    PyErr_Format(PyExc_RuntimeError, "%s: C++ exception: %s", where, e.what());
  } catch (...) {
    PyErr_Format(PyExc_RuntimeError, "%s: C++ exception of an unknown type", where);
  }
}
#define LIBSECTION_RT_CXX_ERROR libsection_rt_set_cxx_error
#else
#define LIBSECTION_RT_CXX_ERROR NULL
#endif

/* A plain instance: its `n` cells, each a new reference. */
static void* libsection_rt_new_cells(PyObject** storage, int n) {
  PyObject** cells = (PyObject**)malloc(sizeof(PyObject*) * (size_t)(n > 0 ? n : 1));
  int i;
  if (!cells) {
    PyErr_NoMemory();
    return NULL;
  }
  for (i = 0; i < n; ++i) {
    cells[i] = storage[i];
    Py_INCREF(storage[i]);
  }
  return cells;
}

static void libsection_rt_free_cells(void* instance, int n) {
  PyObject** cells = (PyObject**)instance;
  int i;
  for (i = 0; i < n; ++i) Py_XDECREF(cells[i]);
  free(cells);
}

/* The tapes of reverse mode (tape.h), in bytes: the last taped pass's and the largest since the
   last reset, from any thread (atomics: a module may run its code without the GIL). */
static size_t libsection_rt_tape_last, libsection_rt_tape_peak;

static void libsection_rt_note_tape(size_t bytes) {
  size_t peak = __atomic_load_n(&libsection_rt_tape_peak, __ATOMIC_RELAXED);
  __atomic_store_n(&libsection_rt_tape_last, bytes, __ATOMIC_RELAXED);
  while (bytes > peak && !__atomic_compare_exchange_n(&libsection_rt_tape_peak, &peak, bytes, 1,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* The loader's reading of them (`_core.tape_bytes`): the last and the largest; `reset` starts
   the largest again from zero. */
LIBSECTION_EXPORT void libsection_tape_bytes(int reset, size_t* last, size_t* peak) {
  *last = __atomic_load_n(&libsection_rt_tape_last, __ATOMIC_RELAXED);
  *peak = reset ? __atomic_exchange_n(&libsection_rt_tape_peak, 0, __ATOMIC_RELAXED)
                : __atomic_load_n(&libsection_rt_tape_peak, __ATOMIC_RELAXED);
}

/* The recordings of reverse mode (reverse_driver.h): a few, of any module, each under the
   identity of the op code that made it, newest last. A pullback takes the one of its inputs; a
   record op takes a swept one to record on again. Bounded in number and bytes (the oldest are
   freed first); a mutex, since modules may run their code without the GIL. */
#define LIBSECTION_RT_RECORDINGS 16
#define LIBSECTION_RT_RECORDING_BYTES ((size_t)512 << 20)
typedef struct libsection_rt_recording {
  char identity[40];
  void* recording;
  size_t bytes;
  void (*free)(void*);
} libsection_rt_recording;
static libsection_rt_recording libsection_rt_recordings[LIBSECTION_RT_RECORDINGS];
static int libsection_rt_recording_count;
static pthread_mutex_t libsection_rt_recording_lock = PTHREAD_MUTEX_INITIALIZER;

static void* libsection_rt_recording_take(const char* identity, int (*matches)(void*, void*),
                                          void* arg) {
  void* found = NULL;
  int i;
  pthread_mutex_lock(&libsection_rt_recording_lock);
  for (i = libsection_rt_recording_count - 1; i >= 0; --i) {
    libsection_rt_recording* r = &libsection_rt_recordings[i];
    if (strncmp(r->identity, identity, sizeof r->identity) || !matches(r->recording, arg)) continue;
    found = r->recording;
    memmove(r, r + 1, sizeof *r * (size_t)(libsection_rt_recording_count - 1 - i));
    --libsection_rt_recording_count;
    break;
  }
  pthread_mutex_unlock(&libsection_rt_recording_lock);
  return found;
}

static void libsection_rt_recording_put(const char* identity, void* recording, size_t bytes,
                                        void (*free_recording)(void*)) {
  libsection_rt_recording gone[LIBSECTION_RT_RECORDINGS + 1];
  int n_gone = 0, i;
  size_t total = bytes;
  libsection_rt_recording* r;
  pthread_mutex_lock(&libsection_rt_recording_lock);
  for (i = 0; i < libsection_rt_recording_count; ++i) total += libsection_rt_recordings[i].bytes;
  while (libsection_rt_recording_count > 0 &&
         (libsection_rt_recording_count == LIBSECTION_RT_RECORDINGS ||
          total > LIBSECTION_RT_RECORDING_BYTES)) { /* the oldest out */
    gone[n_gone++] = libsection_rt_recordings[0];
    total -= libsection_rt_recordings[0].bytes;
    memmove(libsection_rt_recordings, libsection_rt_recordings + 1,
            sizeof *libsection_rt_recordings * (size_t)--libsection_rt_recording_count);
  }
  if (total > LIBSECTION_RT_RECORDING_BYTES) { /* too large to keep alone */
    gone[n_gone].recording = recording;
    gone[n_gone++].free = free_recording;
  } else {
    r = &libsection_rt_recordings[libsection_rt_recording_count++];
    strncpy(r->identity, identity, sizeof r->identity - 1);
    r->identity[sizeof r->identity - 1] = 0;
    r->recording = recording;
    r->bytes = bytes;
    r->free = free_recording;
  }
  pthread_mutex_unlock(&libsection_rt_recording_lock);
  for (i = 0; i < n_gone; ++i) gone[i].free(gone[i].recording);
}

/* The recordings pullbacks swept, from any thread: how a test or a benchmark sees that a value
   and its gradient took one taped pass. */
static size_t libsection_rt_swept;

static void libsection_rt_note_swept(void) {
  __atomic_add_fetch(&libsection_rt_swept, 1, __ATOMIC_RELAXED);
}

LIBSECTION_EXPORT size_t libsection_recordings_swept(int reset) {
  return reset ? __atomic_exchange_n(&libsection_rt_swept, 0, __ATOMIC_RELAXED)
               : __atomic_load_n(&libsection_rt_swept, __ATOMIC_RELAXED);
}

/* The recordings kept now, and their bytes: what the process holds for pullbacks to come. */
LIBSECTION_EXPORT void libsection_recordings_held(size_t* count, size_t* bytes) {
  int i;
  pthread_mutex_lock(&libsection_rt_recording_lock);
  *count = (size_t)libsection_rt_recording_count;
  *bytes = 0;
  for (i = 0; i < libsection_rt_recording_count; ++i) *bytes += libsection_rt_recordings[i].bytes;
  pthread_mutex_unlock(&libsection_rt_recording_lock);
}

/* NumPy's API fields are filled by the table's first call. */
static libsection_runtime libsection_rt_table = {
    LIBSECTION_RUNTIME_ABI,
    libsection_rt_extract,
    libsection_rt_extract_output,
    libsection_rt_init,
    libsection_rt_store_output,
    libsection_rt_cleanup,
    LIBSECTION_RT_CXX_ERROR,
    NULL,
    0,
    libsection_rt_convert,
    libsection_rt_new_cells,
    libsection_rt_free_cells,
    libsection_rt_run_batch,
    libsection_rt_batch_next,
    libsection_rt_batch_output,
    libsection_rt_note_tape,
    libsection_rt_recording_take,
    libsection_rt_recording_put,
    libsection_rt_note_swept,
};

/* The loader's two entry points: the ABI, checked first, then the table, which imports
   NumPy's API on its first call (NULL, with the exception set, when that fails). */
LIBSECTION_EXPORT int libsection_abi_version(void) { return LIBSECTION_RUNTIME_ABI; }
LIBSECTION_EXPORT const libsection_runtime* libsection_runtime_table(void) {
  if (!libsection_rt_table.numpy_api) {
    if (_import_array() < 0) return NULL;
    libsection_rt_table.numpy_api = PyArray_API;
#if NPY_ABI_VERSION >= 0x02000000
    libsection_rt_table.numpy_version = PyArray_RUNTIME_VERSION;
#endif
  }
  return &libsection_rt_table;
}
