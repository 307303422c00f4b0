// clang-format off
// What every module starts with (also the precompiled header): Python, NumPy's C API, and the
// glue every variable of a type shares, written once per module instead of once per variable
// (a module's size, and so its compile time, grows with its inputs only by their calls).
// Embedded into the library at build time (libsection/embed.cmake) as `module_prelude`; the
// lines that start with `//`, these notes, are left out, so a module's text (and its key) is
// the code alone.
#define PY_SSIZE_T_CLEAN
// libstdc++'s <cmath> (which Python.h includes) instantiates the templates of C++17's
// special math functions (std::cyl_bessel_j, ...) in every file: a third of a small
// module's compile. A module that cannot use them leaves them out (`no_special_math_flag`).
// Python.h's configuration comes first, as Python.h itself has it.
#if defined(__cplusplus) && defined(LIBSECTION_NO_SPECIAL_MATH)
#include <pyconfig.h>
#include <cstddef>
#undef _GLIBCXX_USE_STD_SPEC_FUNCS
#endif
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <time.h>
// What C++ modules have always had (ops may rely on it), in the precompiled header: parsed
// in each module's compile it cost 10% of a small one.
#ifdef __cplusplus
#include <exception>
#endif
#ifndef LIBSECTION_PRELUDE
#define LIBSECTION_PRELUDE
// 0 when `py` is an aligned array of `typenum` (native byte order) with `ndim` dimensions;
// otherwise -1 with a TypeError that starts with `want` ("input 0: expected a ...").
// PyArray_EquivTypenums ignores byte order: a '>f8' array would pass as float64 and be read
// as garbage, so non-native byte order is refused too.
static __attribute__((unused)) int libsection_check_tensor(PyObject* py, int typenum, int ndim,
                                                          const char* want,
                                                          const char* label) {
  if (!PyArray_Check(py)) {
    PyErr_Format(PyExc_TypeError, "%s, got %s", want, Py_TYPE(py)->tp_name);
    return -1;
  }
  PyArrayObject* a = (PyArrayObject*)py;
  int const same = PyArray_NDIM(a) == ndim && PyArray_EquivTypenums(PyArray_TYPE(a), typenum);
  if (!same || PyArray_ISBYTESWAPPED(a)) {
    PyObject* got_dtype = PyObject_Str((PyObject*)PyArray_DESCR(a));
    char const* got = got_dtype ? PyUnicode_AsUTF8(got_dtype) : "?";
    if (same)
      PyErr_Format(PyExc_TypeError, "%s, got a %d-d %s array in non-native byte order; convert it with a.astype(a.dtype.newbyteorder('='))", want, PyArray_NDIM(a), got);
    else
      PyErr_Format(PyExc_TypeError, "%s, got a %d-d %s array", want, PyArray_NDIM(a), got);
    Py_XDECREF(got_dtype);
    return -1;
  }
  if (!PyArray_ISALIGNED(a)) {
    PyErr_Format(PyExc_TypeError, "%s: the array's data is not aligned for its dtype", label);
    return -1;
  }
  return 0;
}
// PyTensor's TensorType glue (its code version 11), for the types of drop-in nodes: its
// checks, exception types and messages exactly, written once here. `libsection_pt_extract`
// is its c_extract's check of `py` against `typenum` (`typenum_name` is the NPY_ macro's
// name, which its messages quote); `libsection_pt_sync` its c_sync, `*py` becoming `value`.
static __attribute__((unused)) void libsection_pt_shape(PyArrayObject* a, long int out[6]) {
  int const n = PyArray_NDIM(a);
  for (int i = 0; i < 3; ++i) {
    out[i] = n >= 3 - i ? (long int)PyArray_DIMS(a)[n - 3 + i] : -1;
    out[3 + i] = n >= 3 - i ? (long int)PyArray_STRIDES(a)[n - 3 + i] : -1;
  }
}
static __attribute__((noinline, unused)) int libsection_pt_extract(PyObject* py, int typenum,
                                                                  const char* typenum_name) {
  if (py == Py_None) {
    PyErr_SetString(PyExc_ValueError, "expected an ndarray, not None");
    return -1;
  }
  if (!PyArray_Check(py)) {
    PyErr_SetString(PyExc_ValueError, "expected an ndarray");
    return -1;
  }
  PyArrayObject* a = (PyArrayObject*)py;
  if (!PyArray_ISALIGNED(a)) {
    long int s[6];
    libsection_pt_shape(a, s);
    PyErr_Format(PyExc_NotImplementedError, "expected an aligned array of type %ld (%s), got non-aligned array of type %ld with %ld dimensions, with 3 last dims %ld, %ld, %ld and 3 last strides %ld %ld, %ld.", (long int)typenum, typenum_name, (long int)PyArray_TYPE(a), (long int)PyArray_NDIM(a), s[0], s[1], s[2], s[3], s[4], s[5]);
    return -1;
  }
  if (PyArray_TYPE(a) != typenum) {
    PyErr_Format(PyExc_TypeError, "expected type_num %d (%s) got %d", typenum, typenum_name, PyArray_TYPE(a));
    return -1;
  }
  return 0;
}
static __attribute__((noinline, unused)) int libsection_pt_sync(PyObject** py, PyArrayObject* value) {
  Py_XDECREF(*py);
  if (!value) {
    Py_INCREF(Py_None);
    *py = Py_None;
  } else if ((void*)*py != (void*)value) {
    *py = (PyObject*)value;
  }
  Py_XINCREF(*py);
  if (value && !PyArray_ISALIGNED(value)) {
    long int s[6];
    libsection_pt_shape(value, s);
    PyErr_Format(PyExc_NotImplementedError, "c_sync: expected an aligned array, got non-aligned array of type %ld with %ld dimensions, with 3 last dims %ld, %ld, %ld and 3 last strides %ld %ld, %ld.", (long int)PyArray_TYPE(value), (long int)PyArray_NDIM(value), s[0], s[1], s[2], s[3], s[4], s[5]);
    return -1;
  }
  return 0;
}
// Reference counting in the glue: inline, or in a module with many variables (where
// LIBSECTION_OUTLINE_REFS is 1) calls, since GCC's time on one function of thousands of
// inline branches grows faster than the function.
static __attribute__((noinline, unused)) void libsection_incref(PyObject* o) {
  Py_INCREF(o);
}
static __attribute__((noinline, unused)) void libsection_xdecref(PyObject* o) {
  Py_XDECREF(o);
}
#define LIBSECTION_INCREF(o) \
  (LIBSECTION_OUTLINE_REFS ? libsection_incref((PyObject*)(o)) : Py_INCREF(o))
#define LIBSECTION_XDECREF(o) \
  (LIBSECTION_OUTLINE_REFS ? libsection_xdecref((PyObject*)(o)) : Py_XDECREF(o))
// The runtime (runtime.c): the glue of the built-in types, built with the Python package and
// reached through this table, which `libsection_module_init` receives. A module's node table
// has one `libsection_var` per variable the runtime handles: its kind (`RuntimeVar::Kind`),
// NumPy type number, dimensions (arrays) or item size (scalars), and the two strings its
// messages quote. `value` points at the variable's C value.
typedef struct libsection_var {
  int kind, typenum, n;
  const char* a;
  const char* b;
} libsection_var;
// A batch a module's `run` loops over (batch.c): per input and output cell, the row's array
// (NULL for a scalar, whose value is read from and written to `data`) and the row's data.
typedef struct libsection_batch {
  PyObject** views;
  char** data;
} libsection_batch;
typedef struct libsection_runtime {
  int abi;
  int (*extract)(PyObject* cell, PyObject** py, void* value, const libsection_var* var);
  int (*extract_output)(PyObject* cell, PyObject** py, void* value,
                        const libsection_var* var);
  void (*init)(PyObject** py, void* value, const libsection_var* var);
  int (*store_output)(PyObject* cell, PyObject** py, void* value, const libsection_var* var,
                      int failed);
  void (*cleanup)(PyObject** py, void* value, const libsection_var* var);
  // Sets the Python error for the C++ exception being handled (called inside a `catch`).
  void (*set_cxx_error)(const char* where);
  void** numpy_api;
  int numpy_version;
  // A value from its object, as `extract` converts an input's (params fields use it).
  int (*convert)(PyObject* py, void* value, const libsection_var* var);
  // A plain instance (a module's without constants or struct code) is only its cells: made
  // and freed here, not by code compiled in every module.
  void* (*new_cells)(PyObject** storage, int n);
  void (*free_cells)(void* instance, int n);
  // The batch loop (batch.c): the module's `run` over every row of a batch; moving on to the
  // next row; an output the op made in place of its row view, checked and copied.
  int (*run_batch)(void* self, int (*rows)(void*, libsection_batch*),
                   const libsection_var* const* cells, int n_in, int n_out,
                   PyObject* const* inputs, PyObject** outputs, const long long* plan,
                   const char* const* labels);
  int (*batch_next)(libsection_batch* batch, int* failure);
  int (*batch_output)(libsection_batch* batch, int cell, PyObject** value, int failed);
  // A derived gradient's taped pass (tape.h): the bytes its tape took (entries and adjoints),
  // kept by the runtime as the process's last and largest (`_core.tape_bytes`).
  void (*note_tape)(size_t bytes);
  // The recordings of reverse mode (reverse_driver.h): a record op's taped pass kept for the
  // pullback of the same inputs, by any module of the process. `take` removes and returns the
  // newest recording of `identity` that `matches` accepts (NULL when none); `put` keeps one
  // (`bytes` its size), freeing the oldest past the runtime's bounds with their `free`.
  void* (*recording_take)(const char* identity, int (*matches)(void* recording, void* arg),
                          void* arg);
  void (*recording_put)(const char* identity, void* recording, size_t bytes,
                        void (*free)(void* recording));
  // A pullback swept a recording (counted for `_core.recordings_swept`).
  void (*note_swept)(void);
} libsection_runtime;
// A row's view as the value of a variable of an array type (`PyArrayObject*`, or another pointer
// its type declares): copied, not stored through a cast pointer, which `-Wstrict-aliasing`
// reports and strict aliasing lets the compiler reorder.
#define LIBSECTION_ROW_VIEW(var, view) memcpy(&(var), &(view), sizeof(PyObject*))
// A row's output, after the op ran: nothing to do when the op wrote into the row view it was
// given (the view's reference is dropped), else the runtime's check and copy (also when there
// was no view, an output left to the first row, and the op made none: a failed row's).
#define LIBSECTION_ROW_OUTPUT(var, batch, cell, failed)                   \
  ((batch)->views[cell] && (PyObject*)(var) == (batch)->views[cell]       \
       ? (Py_DECREF((batch)->views[cell]), (var) = NULL, 0)               \
       : libsection_rt->batch_output((batch), (cell), (PyObject**)&(var), (failed)))
// A module takes NumPy's API table from the runtime, which imported it: the running NumPy's
// table, whichever NumPy headers either was compiled with.
#if NPY_ABI_VERSION >= 0x02000000
#define LIBSECTION_USE_RUNTIME_NUMPY(rt) \
  (PyArray_API = (rt)->numpy_api, PyArray_RUNTIME_VERSION = (rt)->numpy_version)
#else
#define LIBSECTION_USE_RUNTIME_NUMPY(rt) (PyArray_API = (rt)->numpy_api)
#endif
// An op's code without the GIL (linker/generate/gil.cpp): its block opens with
// LIBSECTION_NOGIL_REGION, which gives the GIL up when another thread could take it and takes
// it back however the block is left (its end, a goto, a return, an exception); each call of
// Python's or NumPy's API in the op's code is wrapped in LIBSECTION_WITH_GIL, which takes the
// GIL back around the call when the thread gave it up. `libsection_released` is the thread's
// state while its op's code runs without the GIL, NULL while it holds it (so a wrapped call
// inside a wrapped call, or in code that never gave the GIL up, does nothing).
static __thread PyThreadState* libsection_released __attribute__((unused));
typedef struct libsection_nogil {
  PyThreadState* state;  // given up by this block; NULL: the GIL was kept
  int* plan;             // a batch's rows: 0 to be decided by the first row, 1 give it up, -1 keep
  struct timespec start;
} libsection_nogil;
// A batch gives the GIL up for each row when its first row took at least this long: for a
// shorter one, taking it back costs more than the other threads gain.
#define LIBSECTION_NOGIL_ROW_NS 2000
static inline __attribute__((unused)) libsection_nogil libsection_nogil_begin(int* plan, int batch) {
  libsection_nogil r;
  r.state = NULL;
  r.plan = batch ? plan : NULL;
  if (r.plan && *r.plan < 0) return r;
  // Alone in the interpreter (one thread state, this thread's): nobody to give the GIL to, and
  // giving it up costs a call's time.
  if (!PyThreadState_Next(PyInterpreterState_ThreadHead(PyInterpreterState_Get()))) return r;
  if (r.plan && *r.plan == 0) clock_gettime(CLOCK_MONOTONIC, &r.start);
  r.state = PyEval_SaveThread();
  libsection_released = r.state;
  return r;
}
static inline __attribute__((unused)) void libsection_nogil_end(libsection_nogil* r) {
  if (!r->state) return;
  libsection_released = NULL;
  if (r->plan && *r->plan == 0) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long const ns = (now.tv_sec - r->start.tv_sec) * 1000000000LL + (now.tv_nsec - r->start.tv_nsec);
    *r->plan = ns >= LIBSECTION_NOGIL_ROW_NS ? 1 : -1;
  }
  PyEval_RestoreThread(r->state);
}
static inline __attribute__((unused)) PyThreadState* libsection_gil_take(void) {
  PyThreadState* state = libsection_released;
  if (state) {
    libsection_released = NULL;
    PyEval_RestoreThread(state);
  }
  return state;
}
static inline __attribute__((unused)) void libsection_gil_give(PyThreadState** state) {
  if (!*state) return;
  PyEval_SaveThread();
  libsection_released = *state;
}
// `plan`: an int of the run function, 0 before its first row. Valid C and C++ (GCC's and
// Clang's `cleanup` attribute; a statement expression, whose value is the wrapped call's, void
// for a statement such as Py_CLEAR).
#define LIBSECTION_NOGIL_REGION(plan) \
  libsection_nogil libsection_region_ __attribute__((cleanup(libsection_nogil_end), unused)) = \
      libsection_nogil_begin(&(plan), __batch != NULL);
#define LIBSECTION_WITH_GIL(...) \
  ({ PyThreadState* libsection_held_ __attribute__((cleanup(libsection_gil_give), unused)) = \
         libsection_gil_take(); __VA_ARGS__; })
// So `import_array()`, which PyTensor's TensorType puts in every module's init code, has
// nothing left to import when it runs: NumPy's `_import_array` it expands to was 15% of a
// small module's compile. A block, as NumPy's is, so a call without `;` still compiles.
#undef import_array
#define import_array() {}
#endif
