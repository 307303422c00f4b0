// `CompiledOp`: one instance of a loaded module and its storage cells (one-element lists).
#include "compiled_op.hpp"

#include <pybind11/numpy.h>

#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "c_entry.hpp"
#include "section/signature.hpp"
#include "vectorcall_type.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

struct CompiledOp {
  PyObject_HEAD vectorcallfunc vectorcall;
  LoadedLibrary const* library;
  void* instance;
  Py_ssize_t n_inputs, n_outputs, n_cells;
  PyObject** cells;  // one-element lists: inputs, outputs, constants
  PyObject* info;    // dict: what was built, from where
  PyObject* name;    // str, for messages
  // One call at a time uses the instance and its cells. A thread that finds the op busy waits
  // with the GIL released (the running op may release it too); only the thread already running
  // the op (its C code calling back into it) is refused, since waiting would deadlock.
  // A plain mutex, not a PyThread lock: CPython's try-acquire reads the clock twice, which cost
  // as much as running a small op (vmap calls it once per batch element).
  std::mutex* lock;
  unsigned long running_thread;  // 0: not running
  // Instances of the same module for calls that find this one busy because its C code released
  // the GIL (`Py_BEGIN_ALLOW_THREADS` around its loop): each running thread gets a struct of
  // its own, so the calls run at once. A list owned by this op, or NULL for an instance on a
  // PyTensor VM's cells (one VM, one thread) and for the spares themselves.
  PyObject* spares;
  std::vector<DeclaredOutput>* declared;  // one per output, or empty
};

constexpr Py_ssize_t max_spares = 64;  // beyond this many threads at once, calls wait

PyObject* new_spare(CompiledOp* self);

PyTypeObject compiled_op_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

void set_cell(PyObject* cell, PyObject* value) {
  PyObject* old = PyList_GET_ITEM(cell, 0);
  Py_INCREF(value);
  PyList_SET_ITEM(cell, 0, value);
  Py_XDECREF(old);
}

/// A spare instance no thread runs (made when all are busy, up to `max_spares`), or NULL: none
/// may be made (an error is set when making one failed). The GIL is held throughout, so no
/// other thread can take the spare before its caller does.
CompiledOp* idle_spare(CompiledOp* self) {
  if (!self->spares) return nullptr;
  Py_ssize_t const n = PyList_GET_SIZE(self->spares);
  for (Py_ssize_t i = 0; i < n; ++i) {
    auto* spare = reinterpret_cast<CompiledOp*>(PyList_GET_ITEM(self->spares, i));
    if (spare->lock->try_lock()) {
      spare->lock->unlock();
      return spare;
    }
  }
  if (n >= max_spares) return nullptr;
  PyObject* spare = new_spare(self);
  if (!spare) return nullptr;
  int const added = PyList_Append(self->spares, spare);
  Py_DECREF(spare);  // the list holds it
  return added == 0 ? reinterpret_cast<CompiledOp*>(spare) : nullptr;
}

/// Whether `output` is what output `j` was declared to be; if not, a TypeError naming the op,
/// the output and both types is set. A compare of two ints per output on the good path.
bool output_as_declared(CompiledOp* self, Py_ssize_t j, PyObject* output) {
  DeclaredOutput const& want = (*self->declared)[static_cast<std::size_t>(j)];
  if (want.ndim < 0) return true;
  auto& numpy = py::detail::npy_api::get();
  if (!numpy.PyArray_Check_(output)) {
    PyErr_Format(PyExc_TypeError, "%U: output %zd is a %s, but the op declares %s", self->name, j,
                 Py_TYPE(output)->tp_name, want.type.c_str());
    return false;
  }
  auto const* array = py::detail::array_proxy(output);
  if (array->nd == want.ndim) {
    if (py::detail::array_descriptor_proxy(array->descr)->type_num == want.typenum) return true;
    PyObject* declared_descr = numpy.PyArray_DescrFromType_(want.typenum);  // `long` for int64
    bool const same = declared_descr && numpy.PyArray_EquivTypes_(array->descr, declared_descr);
    Py_XDECREF(declared_descr);
    PyErr_Clear();
    if (same) return true;
  }
  // No C++ exception may leave here (C callers): the C API, not pybind11's conversions.
  PyObject* got_dtype = PyObject_Str(array->descr);
  char const* dtype = got_dtype ? PyUnicode_AsUTF8(got_dtype) : nullptr;
  TypeSpec const got{TypeSpec::Kind::tensor, dtype ? dtype : "?", array->nd};
  Py_XDECREF(got_dtype);
  PyErr_Clear();
  PyErr_Format(PyExc_TypeError, "%U: output %zd is a %s array, but the op declares %s", self->name,
               j, got.to_string().c_str(), want.type.c_str());
  return false;
}

/// Runs `run(op)` on `self` or, when another thread runs `self`, on a spare instance (or waits
/// for `self`): one call at a time per instance. `run`'s result, or -1 with an exception set.
template <class Run>
int with_instance(CompiledOp* self, Run const& run) {
  unsigned long const me = PyThread_get_thread_ident();
  if (self->running_thread == me) {
    PyErr_Format(PyExc_RuntimeError,
                 "%U is already running in this thread (its C code cannot "
                 "call it re-entrantly)",
                 self->name);
    return -1;
  }
  if (!self->lock->try_lock()) {
    if (CompiledOp* spare = idle_spare(self)) return with_instance(spare, run);
    if (PyErr_Occurred()) return -1;
    Py_BEGIN_ALLOW_THREADS self->lock->lock();
    Py_END_ALLOW_THREADS
  }
  self->running_thread = me;
  struct Release {  // every return below gives the op back
    CompiledOp* self;
    ~Release() {
      self->running_thread = 0;
      self->lock->unlock();
    }
  } release{self};
  return run(self);
}

/// Runs the op on `inputs` (borrowed, one per input) and stores new references to its outputs
/// in `outputs`: 0, or -1 with an exception set. The one call path: the vectorcall and the
/// native entries Numba and JAX call all come here. `preset` (borrowed, NULL or one per output,
/// each NULL or an array) are arrays the op may write its outputs into, as into outputs it
/// kept: the JAX handler passes XLA's result buffers, so the op writes there without a copy.
/// They are taken out of the cells after the call, since their memory is not the op's.
int run_with_inputs(CompiledOp* op, PyObject* const* inputs, PyObject** outputs,
                    PyObject* const* preset = nullptr) {
  return with_instance(op, [&](CompiledOp* self) {
    for (Py_ssize_t i = 0; i < self->n_inputs; ++i) set_cell(self->cells[i], inputs[i]);
    // An output still held by the caller must not be overwritten: give the op an empty cell.
    // One the caller dropped is handed back, so the op can reuse its memory.
    for (Py_ssize_t j = 0; j < self->n_outputs; ++j) {
      PyObject* cell = self->cells[self->n_inputs + j];
      PyObject* previous = PyList_GET_ITEM(cell, 0);
      if (preset && preset[j]) set_cell(cell, preset[j]);
      else if (previous != Py_None && Py_REFCNT(previous) > 1) set_cell(cell, Py_None);
    }
    int const failure = self->library->run(self->instance);
    for (Py_ssize_t i = 0; i < self->n_inputs; ++i) set_cell(self->cells[i], Py_None);
    if (failure) {
      // Forget kept outputs: one the op cannot take back (wrong type) must not fail every call.
      for (Py_ssize_t j = 0; j < self->n_outputs; ++j)
        set_cell(self->cells[self->n_inputs + j], Py_None);
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "%U failed (code %d) without setting an exception",
                     self->name, failure);
      return -1;
    }
    if (!self->declared->empty()) {
      for (Py_ssize_t j = 0; j < self->n_outputs; ++j) {
        PyObject* cell = self->cells[self->n_inputs + j];
        if (output_as_declared(self, j, PyList_GET_ITEM(cell, 0))) continue;
        for (Py_ssize_t k = 0; k < self->n_outputs; ++k)  // none is kept, none handed out
          set_cell(self->cells[self->n_inputs + k], Py_None);
        return -1;
      }
    }
    for (Py_ssize_t j = 0; j < self->n_outputs; ++j) {
      PyObject* cell = self->cells[self->n_inputs + j];
      PyObject* const given =
          preset ? preset[j] : nullptr;  // read first: `preset` may be `outputs`
      outputs[j] = PyList_GET_ITEM(cell, 0);
      Py_INCREF(outputs[j]);
      if (given && outputs[j] == given) set_cell(cell, Py_None);
    }
    return 0;
  });
}

PyObject* compiled_op_call(PyObject* callable, PyObject* const* args, size_t nargsf,
                           PyObject* kwnames) {
  auto* self = reinterpret_cast<CompiledOp*>(callable);
  Py_ssize_t const nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames && PyTuple_GET_SIZE(kwnames)) {
    PyErr_Format(PyExc_TypeError, "%U takes positional arguments only", self->name);
    return nullptr;
  }
  if (nargs != self->n_inputs) {
    PyErr_Format(PyExc_TypeError, "%U takes %zd input%s, got %zd", self->name, self->n_inputs,
                 self->n_inputs == 1 ? "" : "s", nargs);
    return nullptr;
  }
  PyObject* small[8];
  std::vector<PyObject*> many;
  PyObject** outputs = small;
  if (self->n_outputs > 8) {
    many.resize(static_cast<std::size_t>(self->n_outputs));
    outputs = many.data();
  }
  if (run_with_inputs(self, args, outputs) != 0) return nullptr;
  if (self->n_outputs == 1) return outputs[0];
  PyObject* result = PyTuple_New(self->n_outputs);
  if (!result) {
    for (Py_ssize_t j = 0; j < self->n_outputs; ++j) Py_DECREF(outputs[j]);
    return nullptr;
  }
  for (Py_ssize_t j = 0; j < self->n_outputs; ++j) PyTuple_SET_ITEM(result, j, outputs[j]);
  return result;
}

void compiled_op_dealloc(PyObject* object) {
  auto* self = reinterpret_cast<CompiledOp*>(object);
  if (self->instance) self->library->instance_free(self->instance);
  for (Py_ssize_t i = 0; i < self->n_cells; ++i) Py_XDECREF(self->cells[i]);
  PyMem_Free(self->cells);
  Py_XDECREF(self->info);
  Py_XDECREF(self->name);
  Py_XDECREF(self->spares);
  delete self->declared;
  delete self->lock;
  Py_TYPE(object)->tp_free(object);
}

PyObject* compiled_op_repr(PyObject* object) {
  auto* self = reinterpret_cast<CompiledOp*>(object);
  return PyUnicode_FromFormat("<libsection compiled op %U>", self->name);
}

PyObject* compiled_op_info(PyObject* object, void*) {
  auto* self = reinterpret_cast<CompiledOp*>(object);
  Py_INCREF(self->info);
  return self->info;
}

// ---- running in place: PyTensor's VM calls C thunks natively -------------------------------

/// What a PyTensor VM hands a C thunk: its first member is the `__ERROR` list `[type, value,
/// traceback]` that the VM reads after a failure (CLinker's layout, lazylinker_c.c).
struct CThunkData {
  PyObject* error;  // a three-element list
  PyObject* op;     // the CompiledOp, kept alive by the capsule
};

/// Whether a signal arrived while the op's C code ran with the GIL released, for a caller that
/// is compiled code (PyTensor's VM, Numba's, the JAX handler), which would not look for one
/// before the whole computation is done: its handler runs now, and the exception it raises
/// (KeyboardInterrupt) fails the call, as it would fail Python code.
bool interrupted_during_call() { return PyErr_CheckSignals() != 0; }

int run_cthunk(void* data) {
  auto* d = static_cast<CThunkData*>(data);
  auto* self = reinterpret_cast<CompiledOp*>(d->op);
  int failure = self->library->run(self->instance);
  if (!failure && interrupted_during_call()) failure = -1;
  if (failure) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_RuntimeError, "%U failed (code %d) without setting an exception",
                   self->name, failure);
    move_error_to_vm(d->error);
  }
  return failure;
}

void free_cthunk(PyObject* capsule) {
  auto* d = static_cast<CThunkData*>(PyCapsule_GetContext(capsule));
  if (!d) return;
  Py_XDECREF(d->error);
  Py_XDECREF(d->op);
  delete d;
}

PyObject* compiled_op_cthunk(PyObject* object, PyObject*) {
  auto* d = new (std::nothrow) CThunkData{PyList_New(3), Py_NewRef(object)};
  if (!d) return PyErr_NoMemory();
  if (!d->error) {
    Py_DECREF(d->op);
    delete d;
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < 3; ++i) PyList_SET_ITEM(d->error, i, Py_NewRef(Py_None));
  PyObject* capsule =
      PyCapsule_New(reinterpret_cast<void*>(c_entry<run_cthunk>), nullptr, free_cthunk);
  if (!capsule || PyCapsule_SetContext(capsule, d) != 0) {
    Py_XDECREF(capsule);
    Py_DECREF(d->error);
    Py_DECREF(d->op);
    delete d;
    return nullptr;
  }
  return capsule;
}

PyObject* compiled_op_run_in_place(PyObject* object, PyObject*) {
  auto* self = reinterpret_cast<CompiledOp*>(object);
  int failure = self->library->run(self->instance);
  if (!failure && interrupted_during_call()) failure = -1;
  if (failure) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_RuntimeError, "%U failed (code %d) without setting an exception",
                   self->name, failure);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef compiled_op_methods[] = {
    {"run_in_place", c_entry<compiled_op_run_in_place>, METH_NOARGS,
     "Runs the op on the values its cells hold (an instance linked with `storage`), writing its "
     "outputs to them."},
    {"cthunk", c_entry<compiled_op_cthunk>, METH_NOARGS,
     "A capsule PyTensor's VM calls natively, as it calls CLinker's thunks (CLinker's calling "
     "convention: the function pointer, and data starting with the error list). Keep it as "
     "the thunk's `cthunk` attribute."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef compiled_op_getset[] = {
    {"info", compiled_op_info, nullptr,
     "What was built: cache key, library path, whether this call compiled it, ops and types.",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

void add_compiled_op_type(py::module_& m) {
  // NumPy's C API table, which each call's output check reads, is looked up here, at import:
  // looking it up runs Python code (numpy.lib's version check), where a signal that arrived
  // while an op's C code released the GIL would raise KeyboardInterrupt inside the call.
  py::detail::npy_api::get();
  auto& t = compiled_op_type;
  t.tp_name = "libsection._core.CompiledOp";
  t.tp_basicsize = sizeof(CompiledOp);
  t.tp_doc = R"doc(A compiled op, as ``build()`` returns it: call it with one value per input; it
returns the output (a tuple when there are several). Wrong dtypes or dimensions raise
``TypeError`` before its code runs.

Examples:
    >>> import libsection
    >>> from pathlib import Path
    >>> _ = Path("twice.c").write_text('''#section code
    ... OUTPUT_0 = 2 * INPUT_0;
    ... ''')
    >>> twice = libsection.build("twice.c", inputs=["float64"], outputs=["float64"])
    >>> twice
    <libsection compiled op twice(float64) -> float64>
    >>> print(twice(1.5))
    3.0)doc";
  t.tp_dealloc = compiled_op_dealloc;
  t.tp_repr = compiled_op_repr;
  t.tp_getset = compiled_op_getset;
  t.tp_methods = compiled_op_methods;
  add_vectorcall_type(m, t, "CompiledOp", offsetof(CompiledOp, vectorcall));
}

// ---- the native entry: a CompiledOp called from compiled code ------------------------------
// Numba's nopython code (python/libsection/_numba.py) calls a node's CompiledOp through this
// function's address, without the Python call protocol: no argument tuple, no result tuple.
// The caller holds the GIL and passes borrowed inputs; it receives new references to the
// outputs. The cells are handled as compiled_op_call handles them.

namespace {

/// `run_with_inputs` for compiled code: a signal that arrived meanwhile fails the call (the
/// outputs released), since the caller would not look for it.
int run_natively(CompiledOp* self, PyObject* const* inputs, PyObject** outputs,
                 PyObject* const* preset) {
  if (run_with_inputs(self, inputs, outputs, preset) != 0) return -1;
  if (!interrupted_during_call()) return 0;
  for (Py_ssize_t j = 0; j < self->n_outputs; ++j) Py_CLEAR(outputs[j]);
  return -1;
}

int compiled_op_run_native(PyObject* callable, PyObject* const* inputs, PyObject** outputs) {
  return run_natively(reinterpret_cast<CompiledOp*>(callable), inputs, outputs, nullptr);
}

/// The JAX handler's entry: `outputs` holds, on entry, the arrays over XLA's result buffers.
int compiled_op_run_native_into(PyObject* callable, PyObject* const* inputs, PyObject** outputs) {
  // The arrays given are the presets; run_with_inputs reads each before writing its output.
  return run_natively(reinterpret_cast<CompiledOp*>(callable), inputs, outputs, outputs);
}

}  // namespace

void move_error_to_vm(PyObject* error) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* parts[3] = {type, value, traceback};
  for (Py_ssize_t i = 0; i < 3; ++i) {  // steals the fetched references
    if (!parts[i]) parts[i] = Py_NewRef(Py_None);
    PyList_SetItem(error, i, parts[i]);
  }
}

int run_batch(PyObject* op, PyObject* const* inputs, PyObject** outputs, long long const* plan,
              char const* const* labels) {
  return with_instance(reinterpret_cast<CompiledOp*>(op), [&](CompiledOp* self) {
    return self->library->run_batch(self->instance, inputs, outputs, plan, labels);
  });
}

std::optional<std::pair<Py_ssize_t, Py_ssize_t>> batch_entry_of(py::handle op) {
  if (!PyObject_TypeCheck(op.ptr(), &compiled_op_type)) return std::nullopt;
  auto* self = reinterpret_cast<CompiledOp*>(op.ptr());
  if (!self->library->run_batch) return std::nullopt;
  return std::make_pair(self->n_inputs, self->n_outputs);
}

py::tuple native_entry(py::handle op) {
  if (!PyObject_TypeCheck(op.ptr(), &compiled_op_type))
    throw py::type_error("native_entry takes a CompiledOp, not " +
                         std::string(py::str(py::type::handle_of(op).attr("__name__"))));
  auto* self = reinterpret_cast<CompiledOp*>(op.ptr());
  return py::make_tuple(reinterpret_cast<std::uintptr_t>(c_entry<compiled_op_run_native>),
                        reinterpret_cast<std::uintptr_t>(op.ptr()), self->n_inputs, self->n_outputs,
                        reinterpret_cast<std::uintptr_t>(c_entry<compiled_op_run_native_into>));
}

py::object new_compiled_op(LoadedLibrary const& library, std::size_t n_inputs,
                           std::size_t n_outputs, std::vector<py::object> const& constants,
                           std::optional<std::vector<py::object>> const& storage, py::dict info,
                           std::string const& name, std::vector<DeclaredOutput> declared,
                           bool spare) {
  std::size_t const n_io = n_inputs + n_outputs;
  auto* self = PyObject_New(CompiledOp, &compiled_op_type);
  if (!self) throw py::error_already_set();
  self->vectorcall = c_entry<compiled_op_call>;
  self->library = &library;
  self->instance = nullptr;
  self->n_inputs = static_cast<Py_ssize_t>(n_inputs);
  self->n_outputs = static_cast<Py_ssize_t>(n_outputs);
  Py_ssize_t const n_cells =
      self->n_inputs + self->n_outputs + static_cast<Py_ssize_t>(constants.size());
  self->cells = static_cast<PyObject**>(PyMem_Calloc(n_cells, sizeof(PyObject*)));
  self->n_cells = self->cells ? n_cells : 0;  // what dealloc may release
  self->info = info.release().ptr();
  self->name = py::str(name).release().ptr();
  self->running_thread = 0;
  self->spares = nullptr;
  self->declared = nullptr;
  self->lock = new (std::nothrow) std::mutex;
  py::object owner = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
  if (!self->cells || !self->lock) throw std::bad_alloc();
  if (!declared.empty() && declared.size() != n_outputs)
    throw std::logic_error("new_compiled_op: one declared type per output");
  self->declared = new std::vector<DeclaredOutput>(std::move(declared));
  for (Py_ssize_t i = 0; i < self->n_cells; ++i) {
    if (storage && static_cast<std::size_t>(i) < n_io) {  // the caller's cells, shared
      self->cells[i] = (*storage)[static_cast<std::size_t>(i)].inc_ref().ptr();
      continue;
    }
    std::size_t const c = static_cast<std::size_t>(i - self->n_inputs - self->n_outputs);
    PyObject* value = i < self->n_inputs + self->n_outputs ? Py_None : constants[c].ptr();
    self->cells[i] = PyList_New(1);
    if (!self->cells[i]) throw py::error_already_set();
    Py_INCREF(value);
    PyList_SET_ITEM(self->cells[i], 0, value);
  }
  self->instance = library.instance_new(self->cells);
  if (!self->instance) throw py::error_already_set();
  if (!storage && !spare) {
    self->spares = PyList_New(0);
    if (!self->spares) throw py::error_already_set();
  }
  return owner;
}

namespace {

/// Another instance of `self`'s module, with the same constants (params), for a thread that
/// finds `self` busy. NULL with an exception set on failure.
PyObject* new_spare(CompiledOp* self) {
  try {
    std::vector<py::object> constants;
    for (Py_ssize_t i = self->n_inputs + self->n_outputs; i < self->n_cells; ++i)
      constants.push_back(py::reinterpret_borrow<py::object>(PyList_GET_ITEM(self->cells[i], 0)));
    return new_compiled_op(*self->library, static_cast<std::size_t>(self->n_inputs),
                           static_cast<std::size_t>(self->n_outputs), constants, std::nullopt,
                           py::reinterpret_borrow<py::dict>(self->info),
                           py::reinterpret_borrow<py::str>(self->name).cast<std::string>(),
                           *self->declared, true)
        .release()
        .ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (std::exception const& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  }
  return nullptr;
}

}  // namespace

}  // namespace section::python
