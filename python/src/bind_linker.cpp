// Python bindings of the linker core: Python-defined types and ops, graphs, `build_sections`,
// and `CompiledOp`, the C-implemented callable whose vectorcall runs the module's `run` directly.
#include <dlfcn.h>
#include <fcntl.h>
#include <pybind11/gil_safe_call_once.h>
#include <unistd.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "bindings.hpp"
#include "diagnostic_record.hpp"
#include "loaded.hpp"
#include "section/linker.hpp"
#include "section/log.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

// ---- the Python this process runs -------------------------------------------------------

/// Computed once. Not a function-local static: its initialisation imports modules, which can
/// release the GIL, and a second thread waiting on the static's guard while holding the GIL
/// would deadlock the two.
PythonEnvironment const& python_environment() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<PythonEnvironment> storage;
  return storage.call_once_and_store_result([] {
    py::module_ sysconfig = py::module_::import("sysconfig");
    py::module_ numpy = py::module_::import("numpy");
    py::module_ multiarray = py::module_::import("numpy._core._multiarray_umath");
    PythonEnvironment e;
    e.include_dirs = {py::str(sysconfig.attr("get_config_var")("INCLUDEPY")),
                      py::str(numpy.attr("get_include")())};
    e.abi = py::str(sysconfig.attr("get_config_var")("SOABI"));
    e.numpy_api = std::string(py::str(numpy.attr("__version__"))) + " C-API " +
                  std::string(py::str(multiarray.attr("_get_ndarray_c_version")()));
    return e;
  }).get_stored();
}

// ---- types and ops written in Python ----------------------------------------------------

std::vector<std::string> string_list(py::object const& value) {
  if (value.is_none()) return {};
  if (py::isinstance<py::str>(value)) return {value.cast<std::string>()};
  return value.cast<std::vector<std::string>>();
}

py::dict sub_dict(Sub const& sub) {
  py::dict d;
  for (auto const& [k, v] : sub) d[py::str(k)] = py::str(v);
  return d;
}

/// A type object from Python with the seed's methods (`c_declare(name, sub)`, ...). The GIL is
/// held: the linker only generates code while the caller holds it.
class PythonType final : public CType {
 public:
  explicit PythonType(py::object type) : type_(std::move(type)) {
    for (char const* required : {"c_declare", "c_extract"})
      if (!py::hasattr(type_, required))
        throw py::type_error("type " + std::string(py::repr(type_)) + " has no " + required +
                             "(name, sub) method: it cannot be used from C");
  }
  std::string describe() const override { return py::str(type_); }
  std::string c_declare(std::string const& n, Sub const& s, bool) const override {
    return text("c_declare", n, s);
  }
  std::string c_init(std::string const& n, Sub const& s) const override { return text("c_init", n, s); }
  std::string c_extract(std::string const& n, Sub const& s, bool) const override {
    return text("c_extract", n, s);
  }
  std::string c_sync(std::string const& n, Sub const& s) const override { return text("c_sync", n, s); }
  std::string c_cleanup(std::string const& n, Sub const& s) const override {
    return text("c_cleanup", n, s);
  }
  std::vector<std::string> c_support_code() const override { return list("c_support_code"); }
  std::vector<std::string> c_headers() const override { return list("c_headers"); }
  std::vector<std::string> c_header_dirs() const override { return list("c_header_dirs"); }
  std::vector<std::string> c_libraries() const override { return list("c_libraries"); }
  std::vector<std::string> c_lib_dirs() const override { return list("c_lib_dirs"); }
  std::vector<std::string> c_compile_args() const override { return list("c_compile_args"); }
  std::vector<std::string> c_init_code() const override { return list("c_init_code"); }
  std::string c_code_cache_version() const override {
    if (!py::hasattr(type_, "c_code_cache_version")) return {};
    return py::str(type_.attr("c_code_cache_version")());
  }
  std::string c_element_type() const override {
    if (!py::hasattr(type_, "c_element_type")) return {};
    return py::str(type_.attr("c_element_type")());
  }

 private:
  std::string text(char const* method, std::string const& name, Sub const& sub) const {
    if (!py::hasattr(type_, method)) return {};
    return type_.attr(method)(name, sub_dict(sub)).cast<std::string>();
  }
  std::vector<std::string> list(char const* method) const {
    if (!py::hasattr(type_, method)) return {};
    return string_list(type_.attr(method)());
  }
  py::object type_;
};

/// An op object from Python with PyTensor `COp`-like methods, minus the `node` argument:
/// `c_code(name, inputs, outputs, sub)` (required), `c_code_cleanup(...)`, `c_support_code()`,
/// `c_support_code_apply(name)`, `c_init_code()`, `c_init_code_apply(name)`,
/// `c_support_code_struct(name)`, `c_init_code_struct(name, sub)`,
/// `c_cleanup_code_struct(name)`, `c_headers()`, `c_header_dirs()`, `c_libraries()`,
/// `c_lib_dirs()`, `c_compile_args()`. A string attribute `name` names it in messages (default:
/// its class's name).
class PythonOp final : public COp {
 public:
  explicit PythonOp(py::object op) : op_(std::move(op)) {
    if (!py::hasattr(op_, "c_code"))
      throw py::type_error("op " + std::string(py::repr(op_)) +
                           " has no c_code(name, inputs, outputs, sub) method");
  }
  std::string name() const override {
    if (py::hasattr(op_, "name") && py::isinstance<py::str>(op_.attr("name")))
      return op_.attr("name").cast<std::string>();
    return py::str(py::type::handle_of(op_).attr("__name__"));
  }
  OpCode generate(ApplyContext const& ctx) const override {
    py::str const node(ctx.node_name);
    py::list inputs = py::cast(ctx.inputs), outputs = py::cast(ctx.outputs);
    py::dict const sub = sub_dict(ctx.sub);
    OpCode code;
    code.code = op_.attr("c_code")(node, inputs, outputs, sub).cast<std::string>();
    code.code_cleanup = call("c_code_cleanup", node, inputs, outputs, sub);
    code.support_code = list("c_support_code");
    code.init_code = list("c_init_code");
    code.headers = list("c_headers");
    code.header_dirs = list("c_header_dirs");
    code.libraries = list("c_libraries");
    code.lib_dirs = list("c_lib_dirs");
    code.compile_args = list("c_compile_args");
    code.support_code_apply = call("c_support_code_apply", node);
    code.init_code_apply = call("c_init_code_apply", node);
    code.support_code_struct = call("c_support_code_struct", node);
    code.init_code_struct = call("c_init_code_struct", node, sub_dict(ctx.init_sub));
    code.cleanup_code_struct = call("c_cleanup_code_struct", node);
    return code;
  }

 private:
  template <class... Args>
  std::string call(char const* method, Args&&... args) const {
    if (!py::hasattr(op_, method)) return {};
    return op_.attr(method)(std::forward<Args>(args)...).template cast<std::string>();
  }
  std::vector<std::string> list(char const* method) const {
    if (!py::hasattr(op_, method)) return {};
    return string_list(op_.attr(method)());
  }
  py::object op_;
};

CTypePtr to_type(py::handle value) {
  if (py::isinstance<py::str>(value)) return parse_ctype(value.cast<std::string>());
  return std::make_shared<PythonType>(py::reinterpret_borrow<py::object>(value));
}

// ---- loaded modules -----------------------------------------------------------------------

using InitFn = PyObject* (*)();
using NewFn = void* (*)(PyObject**);
using RunFn = int (*)(void*);
using FreeFn = void (*)(void*);

/// A shared object loaded and initialised once per process; never unloaded, since instances
/// and the Python objects they created may outlive any handle we could count.
struct LoadedLibrary {
  void* handle = nullptr;
  NewFn instance_new = nullptr;
  RunFn run = nullptr;
  FreeFn instance_free = nullptr;
};

/// Loads the module of cache entry `key` from `verified_fd`, the descriptor its SHA-256 was
/// checked through (`/proc/self/fd/N` reopens that same file, whatever `path` names by now), so
/// nothing can be swapped in between. The descriptor stays open: glibc knows the module by
/// that name, and a reused number would make a later dlopen return this module again.
/// A debug build is loaded by its path: gdb reads modules by the loader's name for them, and
/// `/proc/self/fd/N` would name one of gdb's own descriptors.
LoadedLibrary const& load_library(std::string const& key, std::filesystem::path const& path,
                                  int verified_fd, bool by_path) {
  static std::map<std::string, LoadedLibrary> loaded;  // by cache key; guarded by the GIL
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  if (verified_fd < 0) throw LinkError("cannot load " + path.string() + ": it was not verified");
  int const fd = ::fcntl(verified_fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw LinkError("cannot load " + path.string() + ": " + std::strerror(errno));
  std::string const by_fd = by_path ? path.string() : "/proc/self/fd/" + std::to_string(fd);
  LoadedLibrary lib;
  lib.handle = ::dlopen(by_fd.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    std::string const why = ::dlerror();
    ::close(fd);
    throw LinkError("cannot load " + path.string() + " (through " + by_fd + "): " + why);
  }
  auto symbol = [&](char const* name) {
    void* s = ::dlsym(lib.handle, name);
    if (!s) throw LinkError(path.string() + " is not a libsection module: no " + name);
    return s;
  };
  auto abi = reinterpret_cast<int (*)()>(symbol("libsection_abi_version"));
  if (abi() != module_abi_version)
    throw LinkError(path.string() + " was built for module ABI " + std::to_string(abi()) +
                    ", this libsection loads ABI " + std::to_string(module_abi_version));
  auto init = reinterpret_cast<InitFn>(symbol("libsection_module_init"));
  lib.instance_new = reinterpret_cast<NewFn>(symbol("libsection_instance_new"));
  lib.run = reinterpret_cast<RunFn>(symbol("libsection_instance_run"));
  lib.instance_free = reinterpret_cast<FreeFn>(symbol("libsection_instance_free"));
  if (!init()) throw py::error_already_set();
  return loaded.emplace(key, lib).first->second;
}

// ---- CompiledOp: the callable -------------------------------------------------------------

struct CompiledOp {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  LoadedLibrary const* library;
  void* instance;
  Py_ssize_t n_inputs, n_outputs, n_cells;
  PyObject** cells;  // one-element lists: inputs, outputs, constants
  PyObject* info;    // dict: what was built, from where
  PyObject* name;    // str, for messages
  // One call at a time uses the instance and its cells. A thread that finds the op busy waits
  // with the GIL released (the running op may release it too); only the thread already running
  // the op (its C code calling back into it) is refused, since waiting would deadlock.
  PyThread_type_lock lock;
  unsigned long running_thread;  // 0: not running
};

PyTypeObject compiled_op_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

void set_cell(PyObject* cell, PyObject* value) {
  PyObject* old = PyList_GET_ITEM(cell, 0);
  Py_INCREF(value);
  PyList_SET_ITEM(cell, 0, value);
  Py_XDECREF(old);
}

/// Runs the op on `inputs` (borrowed, one per input) and stores new references to its outputs
/// in `outputs`: 0, or -1 with an exception set. The one call path: the vectorcall and the
/// native entry Numba calls both come here.
int run_with_inputs(CompiledOp* self, PyObject* const* inputs, PyObject** outputs) {
  unsigned long const me = PyThread_get_thread_ident();
  if (self->running_thread == me) {
    PyErr_Format(PyExc_RuntimeError, "%U is already running in this thread (its C code cannot "
                 "call it re-entrantly)", self->name);
    return -1;
  }
  if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
  }
  self->running_thread = me;
  struct Release {  // every return below gives the op back
    CompiledOp* self;
    ~Release() {
      self->running_thread = 0;
      PyThread_release_lock(self->lock);
    }
  } release{self};
  for (Py_ssize_t i = 0; i < self->n_inputs; ++i) set_cell(self->cells[i], inputs[i]);
  // An output still held by the caller must not be overwritten: give the op an empty cell.
  // One the caller dropped is handed back, so the op can reuse its memory.
  for (Py_ssize_t j = 0; j < self->n_outputs; ++j) {
    PyObject* cell = self->cells[self->n_inputs + j];
    PyObject* previous = PyList_GET_ITEM(cell, 0);
    if (previous != Py_None && Py_REFCNT(previous) > 1) set_cell(cell, Py_None);
  }
  int const failure = self->library->run(self->instance);
  for (Py_ssize_t i = 0; i < self->n_inputs; ++i) set_cell(self->cells[i], Py_None);
  if (failure) {
    // Forget kept outputs: one the op cannot take back (wrong type) must not fail every call.
    for (Py_ssize_t j = 0; j < self->n_outputs; ++j) set_cell(self->cells[self->n_inputs + j], Py_None);
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_RuntimeError, "%U failed (code %d) without setting an exception",
                   self->name, failure);
    return -1;
  }
  for (Py_ssize_t j = 0; j < self->n_outputs; ++j) {
    outputs[j] = PyList_GET_ITEM(self->cells[self->n_inputs + j], 0);
    Py_INCREF(outputs[j]);
  }
  return 0;
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
  if (self->lock) PyThread_free_lock(self->lock);
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
  PyObject* error;   // a three-element list
  PyObject* op;      // the CompiledOp, kept alive by the capsule
};

int run_cthunk(void* data) {
  auto* d = static_cast<CThunkData*>(data);
  auto* self = reinterpret_cast<CompiledOp*>(d->op);
  int const failure = self->library->run(self->instance);
  if (failure) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_RuntimeError, "%U failed (code %d) without setting an exception",
                   self->name, failure);
    PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject* parts[3] = {type, value, traceback};
    for (Py_ssize_t i = 0; i < 3; ++i) {  // steals the fetched references
      if (!parts[i]) parts[i] = Py_NewRef(Py_None);
      PyList_SetItem(d->error, i, parts[i]);
    }
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
  PyObject* capsule = PyCapsule_New(reinterpret_cast<void*>(&run_cthunk), nullptr, free_cthunk);
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
  int const failure = self->library->run(self->instance);
  if (failure) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_RuntimeError, "%U failed (code %d) without setting an exception",
                   self->name, failure);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef compiled_op_methods[] = {
    {"run_in_place", compiled_op_run_in_place, METH_NOARGS,
     "Runs the op on the values its cells hold (an instance linked with `storage`), writing its "
     "outputs to them."},
    {"cthunk", compiled_op_cthunk, METH_NOARGS,
     "A capsule PyTensor's VM calls natively, as it calls CLinker's thunks (CLinker's calling "
     "convention: the function pointer, and data starting with the error list). Keep it as "
     "the thunk's `cthunk` attribute."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef compiled_op_getset[] = {
    {"info", compiled_op_info, nullptr,
     "What was built: cache key, library path, whether this call compiled it, ops and types.",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

void ready_compiled_op_type() {
  auto& t = compiled_op_type;
  t.tp_name = "libsection._core.CompiledOp";
  t.tp_basicsize = sizeof(CompiledOp);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_doc = "A compiled op: call it with one value per input; returns the output (or a tuple).";
  t.tp_vectorcall_offset = offsetof(CompiledOp, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_dealloc = compiled_op_dealloc;
  t.tp_repr = compiled_op_repr;
  t.tp_getset = compiled_op_getset;
  t.tp_methods = compiled_op_methods;
  if (PyType_Ready(&t) < 0) throw py::error_already_set();
}

// ---- the native entry: a CompiledOp called from compiled code ------------------------------
// Numba's nopython code (python/libsection/_numba.py) calls a node's CompiledOp through this
// function's address, without the Python call protocol: no argument tuple, no result tuple.
// The caller holds the GIL and passes borrowed inputs; it receives new references to the
// outputs. The cells are handled as compiled_op_call handles them.

int compiled_op_run_native(PyObject* callable, PyObject* const* inputs, PyObject** outputs) {
  return run_with_inputs(reinterpret_cast<CompiledOp*>(callable), inputs, outputs);
}

/// What compiled code needs to call `op` natively: the entry's address, the op's address and
/// its input and output counts. The caller keeps `op` alive while the addresses are in use.
py::tuple native_entry(py::handle op) {
  if (!PyObject_TypeCheck(op.ptr(), &compiled_op_type))
    throw py::type_error("native_entry takes a CompiledOp, not " +
                         std::string(py::str(py::type::handle_of(op).attr("__name__"))));
  auto* self = reinterpret_cast<CompiledOp*>(op.ptr());
  return py::make_tuple(reinterpret_cast<std::uintptr_t>(&compiled_op_run_native),
                        reinterpret_cast<std::uintptr_t>(op.ptr()), self->n_inputs,
                        self->n_outputs);
}

py::handle link_error_type, compile_error_type;

// Raises the Python form of a linker error, its diagnostics resolved against `sm`.
[[noreturn]] void raise_python(LinkError const& e, SourceManager const& sm) {
  if (dynamic_cast<InputTypeError const*>(&e)) throw py::type_error(e.what());
  auto const* compile = dynamic_cast<CompileError const*>(&e);
  py::handle type = compile ? compile_error_type : link_error_type;
  py::object error = type(e.what());
  error.attr("diagnostics") = py::cast(make_records(e.diagnostics(), sm));
  if (compile) error.attr("kept_dir") = compile->kept_dir().string();
  PyErr_SetObject(type.ptr(), error.ptr());
  throw py::error_already_set();
}

// The in-process memo: a module already verified and loaded is not hashed again.
// Never destroyed: it holds Python objects, which must not be released after finalisation.
std::map<std::string, std::pair<std::filesystem::path, py::dict>>& loaded_modules() {
  static auto* memo = new std::map<std::string, std::pair<std::filesystem::path, py::dict>>();
  return *memo;
}

/// Generates, builds (or finds) and loads the module for `graph`, and instantiates it with the
/// values of the graph's constants.
py::object link(Graph const& graph, std::vector<py::object> const& constants, SourceManager& sm,
                std::string const& display_name,
                std::optional<std::vector<py::object>> const& storage = std::nullopt,
                bool instantiate = true) {
  if (constants.size() != graph.constants().size())
    throw py::value_error("the graph has " + std::to_string(graph.constants().size()) +
                          " constants, " + std::to_string(constants.size()) + " values given");
  std::size_t const n_io = graph.inputs().size() + graph.outputs().size();
  if (storage) {
    if (storage->size() != n_io)
      throw py::value_error("the graph has " + std::to_string(n_io) + " inputs and outputs, " +
                            std::to_string(storage->size()) + " storage cells given");
    for (auto const& cell : *storage)
      if (!PyList_CheckExact(cell.ptr()) || PyList_GET_SIZE(cell.ptr()) != 1)
        throw py::type_error("storage cells must be one-element lists");
  }
  ModuleSource module;
  try {
    module = generate_module(graph);
  } catch (LinkError const& e) {
    raise_python(e, sm);
  }
  PythonEnvironment const& python = python_environment();

  std::filesystem::path library;
  std::string key;
  FileHandle verified_library;  // the module's bytes as verified; loaded through this
  bool debug = false;           // a build for gdb, loaded by path
  py::dict info;
  auto& memo = loaded_modules();
  if (auto it = memo.find(module.text); it != memo.end()) {
    library = it->second.first;
    info = py::dict(it->second.second);
    info["compiled"] = false;
    key = info["key"].cast<std::string>();
  } else {
    BuiltModule built;
    try {
      py::gil_scoped_release release;
      ModuleCache cache;
      built = build_module(module, python, cache, sm);
    } catch (LinkError const& e) {
      raise_python(e, sm);
    }
    library = built.entry.library;
    key = built.entry.key;
    verified_library = built.entry.library_file;
    info["key"] = built.entry.key;
    info["library"] = library.string();
    info["module"] = module.name;
    info["ops"] = module.op_names;
    info["inputs"] = module.input_types;
    info["outputs"] = module.output_types;
    info["compiled"] = built.compiled;
    debug = built.debug;
  }
  LoadedLibrary const& lib = load_library(key, library, verified_library.get(), debug);
  memo.emplace(module.text, std::make_pair(library, py::dict(info)));
  if (!instantiate) return py::none();

  auto* self = PyObject_New(CompiledOp, &compiled_op_type);
  if (!self) throw py::error_already_set();
  self->vectorcall = compiled_op_call;
  self->library = &lib;
  self->instance = nullptr;
  self->n_inputs = static_cast<Py_ssize_t>(graph.inputs().size());
  self->n_outputs = static_cast<Py_ssize_t>(graph.outputs().size());
  Py_ssize_t const n_cells =
      self->n_inputs + self->n_outputs + static_cast<Py_ssize_t>(constants.size());
  self->cells = static_cast<PyObject**>(PyMem_Calloc(n_cells, sizeof(PyObject*)));
  self->n_cells = self->cells ? n_cells : 0;  // what dealloc may release
  self->info = info.release().ptr();
  self->name = py::str(display_name).release().ptr();
  self->running_thread = 0;
  self->lock = PyThread_allocate_lock();
  py::object owner = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
  if (!self->cells || !self->lock) throw std::bad_alloc();
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
  self->instance = lib.instance_new(self->cells);
  if (!self->instance) throw py::error_already_set();
  return owner;
}

std::string signature_text(std::string const& name, std::vector<CTypePtr> const& inputs,
                           std::vector<CTypePtr> const& outputs) {
  std::string s = name + "(";
  for (std::size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i]->describe();
  s += ") -> ";
  for (std::size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + outputs[i]->describe();
  return s;
}

/// A graph under construction from Python, with the Python objects its types and ops wrap.
struct PyGraph {
  Graph graph;
};

/// The core's notices become records of the `libsection` logger, so handlers, `caplog` and
/// notebooks see them and levels silence them; nothing of the core's reaches fd 2 directly.
void log_to_python(LogRecord const& record) {
  if (!Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;  // builds run with the GIL released
  try {
    int const level = record.level == LogLevel::debug     ? 10
                      : record.level == LogLevel::warning ? 30
                                                          : 20;
    py::dict extra;
    if (record.seconds >= 0) extra["seconds"] = record.seconds;
    py::module_::import("logging").attr("getLogger")("libsection").attr("log")(
        level, record.message, py::arg("extra") = extra);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("libsection logging");
  }
}

}  // namespace

void bind_linker(py::module_& m) {
  set_log_sink(log_to_python);
  // Back to stderr before the interpreter goes, in case a thread still builds.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { set_log_sink({}); }));
  ready_compiled_op_type();
  Py_INCREF(&compiled_op_type);
  m.add_object("CompiledOp", reinterpret_cast<PyObject*>(&compiled_op_type));

  link_error_type = PyErr_NewException("libsection._core.LinkError", PyExc_ValueError, nullptr);
  compile_error_type =
      PyErr_NewException("libsection._core.CompileError", PyExc_RuntimeError, nullptr);
  if (!link_error_type || !compile_error_type) throw py::error_already_set();
  m.add_object("LinkError", link_error_type);
  m.add_object("CompileError", compile_error_type);
  // Errors without a SourceManager at hand (e.g. a corrupt cache, a missing compiler).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (LinkError const& e) {
      PyErr_SetString(link_error_type.ptr(), e.what());
    }
  });

  py::class_<PyGraph>(m, "Graph", R"doc(
A graph of applies for one compiled module. Types are type strings (`"float64[:]"`) or Python
objects with the CType methods (`c_declare(name, sub)`, `c_extract`, ...); ops are Python
objects with `c_code(name, inputs, outputs, sub)` and optionally the other `c_*` methods.)doc")
      .def(py::init<>())
      .def("add_input",
           [](PyGraph& g, py::object type, std::string label) {
             return g.graph.add_input(to_type(type), std::move(label));
           },
           py::arg("type"), py::arg("label") = "")
      .def("add_constant",
           [](PyGraph& g, py::object type, std::string label) {
             return g.graph.add_constant(to_type(type), std::move(label));
           },
           py::arg("type"), py::arg("label") = "")
      .def("add_apply",
           [](PyGraph& g, py::object op, std::vector<std::size_t> inputs, py::list output_types,
              std::optional<std::size_t> params) {
             std::vector<CTypePtr> types;
             for (auto t : output_types) types.push_back(to_type(t));
             return g.graph.add_apply(std::make_shared<PythonOp>(std::move(op)), std::move(inputs),
                                      std::move(types), params);
           },
           py::arg("op"), py::arg("inputs"), py::arg("output_types"),
           py::arg("params") = py::none(), "Adds an apply; returns its output variables.")
      .def("add_output", [](PyGraph& g, std::size_t v) { g.graph.add_output(v); })
      .def("source",
           [](PyGraph const& g) { return generate_module(g.graph).text; },
           "The generated C++ source of the module.");

  m.def("link",
        [](PyGraph const& g, std::vector<py::object> const& constants, std::string const& name,
           std::optional<std::vector<py::object>> const& storage) {
          SourceManager sm;
          return link(g.graph, constants, sm, name, storage);
        },
        py::arg("graph"), py::arg("constants") = std::vector<py::object>{},
        py::arg("name") = "module", py::arg("storage") = py::none(),
        R"doc(Builds (or finds in the cache) and loads the graph's module; returns a CompiledOp.
``storage``: one-element lists to use as the input and output cells (a PyTensor VM's
storage), for an instance run in place with ``run_in_place`` or through ``cthunk()``.)doc");

  m.def("prepare",
        [](PyGraph const& g, std::string const& name) {
          SourceManager sm;
          link(g.graph, std::vector<py::object>(g.graph.constants().size(), py::none()), sm, name,
               std::nullopt, false);
        },
        py::arg("graph"), py::arg("name") = "module",
        "Builds (or finds in the cache) and loads the graph's module without instantiating it, so "
        "a later `link` of the same graph only instantiates. Releases the GIL while compiling: "
        "threads prepare several graphs at once.");

  m.def("build_sections",
        [](LoadedSections& loaded, std::vector<std::string> const& inputs,
           std::vector<std::string> const& outputs, std::optional<std::string> func_name,
           std::vector<std::tuple<std::string, std::string, py::object>> const& params,
           std::string const& name, std::optional<int> num_inputs, std::optional<int> num_outputs,
           bool check_input) {
          if (!loaded.set.ok())
            raise_python(LinkError(loaded.set.error->message, loaded.set.diagnostics), *loaded.sources);
          std::vector<CTypePtr> in, out;
          for (std::size_t i = 0; i < inputs.size(); ++i) {
            try {
              in.push_back(parse_ctype(inputs[i]));
            } catch (std::invalid_argument const& e) {
              throw py::value_error("inputs[" + std::to_string(i) + "]: " + e.what());
            }
          }
          for (std::size_t i = 0; i < outputs.size(); ++i) {
            try {
              out.push_back(parse_ctype(outputs[i]));
            } catch (std::invalid_argument const& e) {
              throw py::value_error("outputs[" + std::to_string(i) + "]: " + e.what());
            }
          }
          SectionOpSpec spec;
          spec.name = name;
          spec.func_name = func_name;
          spec.num_inputs = num_inputs;
          spec.num_outputs = num_outputs;
          spec.check_input = check_input;
          std::vector<py::object> constants;
          if (!params.empty()) {
            std::vector<NamedType> fields;
            py::dict values;
            for (auto const& [field, type, value] : params) {
              try {
                fields.push_back({field, parse_type(type)});
              } catch (std::invalid_argument const& e) {
                throw py::value_error("params[" + field + "]: " + e.what());
              }
              values[py::str(field)] = value;
            }
            try {
              spec.params = std::make_shared<ParamsType>(std::move(fields));
            } catch (std::invalid_argument const& e) {
              throw py::value_error(std::string("params: ") + e.what());
            }
            constants.push_back(values);
          }
          auto op = std::make_shared<SectionOp>(spec, loaded.sources, loaded.set);
          Graph graph = single_op_graph(op, in, out, spec.params);
          return link(graph, constants, *loaded.sources, signature_text(name, in, out));
        },
        py::arg("loaded"), py::arg("inputs"), py::arg("outputs"), py::arg("func_name") = py::none(),
        py::arg("params") = std::vector<std::tuple<std::string, std::string, py::object>>{},
        py::arg("name") = "SectionOp", py::arg("num_inputs") = py::none(),
        py::arg("num_outputs") = py::none(), py::arg("check_input") = true,
        "Builds the op of loaded section files for the given input/output type strings.");

  m.def("native_entry", &native_entry, py::arg("op"),
        "(entry address, op address, inputs, outputs): how compiled code (Numba) calls a "
        "CompiledOp natively; see python/libsection/_numba.py.");

  m.def("cache_dir", [] { return ModuleCache::default_root().string(); },
        "The module cache directory this process uses.");
}

}  // namespace section::python
