// `Dispatcher`: the class API's `op(x, y)` in C. It finds the compiled op for the arguments'
// types (dtype, number of dimensions and byte order of each array; the type of each number)
// in a small table, and asks Python (`miss(*args)`) only for types it has not seen.
#include <pybind11/numpy.h>

#include <cstdint>
#include <vector>

#include "bindings.hpp"
#include "c_entry.hpp"
#include "vectorcall_type.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

/// One argument's type, as the compiled ops tell them apart.
struct ArgKey {
  PyTypeObject* type;  // the argument's Python type
  int type_num = -1;   // arrays: NumPy type number
  int ndim = -1;       // arrays: number of dimensions
  char byteorder = 0;  // arrays: '=', '|', '<' or '>'
  bool operator==(ArgKey const& o) const {
    return type == o.type && type_num == o.type_num && ndim == o.ndim && byteorder == o.byteorder;
  }
};

struct Entry {
  std::vector<ArgKey> key;
  PyObject* compiled;  // strong reference
};

constexpr std::size_t max_entries = 32;  // a long session with many signatures starts afresh

struct Dispatcher {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* miss;  // Python callable: *args -> compiled op
  std::vector<Entry>* entries;
};

PyTypeObject dispatcher_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool key_of(PyObject* arg, ArgKey& key) {
  key.type = Py_TYPE(arg);
  if (py::isinstance<py::array>(arg)) {
    auto const* array = py::detail::array_proxy(arg);
    auto const* descr = py::detail::array_descriptor_proxy(array->descr);
    key.type_num = descr->type_num;
    key.ndim = array->nd;
    key.byteorder = descr->byteorder;
  }
  return true;
}

void clear_entries(Dispatcher* self) {
  for (auto& e : *self->entries) Py_DECREF(e.compiled);
  self->entries->clear();
}

PyObject* dispatcher_call(PyObject* callable, PyObject* const* args, size_t nargsf,
                          PyObject* kwnames) {
  auto* self = reinterpret_cast<Dispatcher*>(callable);
  Py_ssize_t const n = PyVectorcall_NARGS(nargsf);
  ArgKey keys[8];
  std::vector<ArgKey> many;
  ArgKey* key = keys;
  if (n > 8) {
    many.resize(static_cast<std::size_t>(n));
    key = many.data();
  }
  for (Py_ssize_t i = 0; i < n; ++i) key_of(args[i], key[i]);
  PyObject* compiled = nullptr;
  for (auto const& e : *self->entries) {
    if (e.key.size() != static_cast<std::size_t>(n)) continue;
    bool same = true;
    for (Py_ssize_t i = 0; same && i < n; ++i) same = e.key[static_cast<std::size_t>(i)] == key[i];
    if (same) {
      compiled = e.compiled;
      break;
    }
  }
  if (!compiled) {
    PyObject* found = PyObject_Vectorcall(self->miss, args, nargsf, kwnames);
    if (!found) return nullptr;
    if (self->entries->size() >= max_entries) clear_entries(self);
    self->entries->push_back({std::vector<ArgKey>(key, key + n), found});  // owns `found`
    compiled = found;
  }
  return PyObject_Vectorcall(compiled, args, nargsf, kwnames);
}

PyObject* dispatcher_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* miss = nullptr;
  static char const* names[] = {"miss", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Dispatcher", const_cast<char**>(names), &miss))
    return nullptr;
  if (!PyCallable_Check(miss)) {
    PyErr_SetString(PyExc_TypeError, "Dispatcher(miss): miss must be callable");
    return nullptr;
  }
  auto* self = reinterpret_cast<Dispatcher*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = c_entry<dispatcher_call>;
  self->miss = Py_NewRef(miss);
  self->entries = new (std::nothrow) std::vector<Entry>();
  if (!self->entries) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  return reinterpret_cast<PyObject*>(self);
}

int dispatcher_traverse(PyObject* object, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<Dispatcher*>(object);
  Py_VISIT(self->miss);  // usually a bound method of the op that owns this dispatcher
  if (self->entries)
    for (auto const& e : *self->entries) Py_VISIT(e.compiled);
  return 0;
}

int dispatcher_clear(PyObject* object) {
  auto* self = reinterpret_cast<Dispatcher*>(object);
  Py_CLEAR(self->miss);
  if (self->entries) clear_entries(self);
  return 0;
}

void dispatcher_dealloc(PyObject* object) {
  auto* self = reinterpret_cast<Dispatcher*>(object);
  PyObject_GC_UnTrack(object);
  dispatcher_clear(object);
  delete self->entries;
  Py_TYPE(object)->tp_free(object);
}

PyObject* dispatcher_forget(PyObject* object, PyObject*) {
  clear_entries(reinterpret_cast<Dispatcher*>(object));
  Py_RETURN_NONE;
}

PyObject* dispatcher_len(PyObject* object, void*) {
  return PyLong_FromSize_t(reinterpret_cast<Dispatcher*>(object)->entries->size());
}

PyMethodDef dispatcher_methods[] = {
    {"forget", c_entry<dispatcher_forget>, METH_NOARGS,
     "Drops every compiled op found so far (e.g. after the op's params changed)."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef dispatcher_getset[] = {
    {"size", dispatcher_len, nullptr, "How many argument signatures are known.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

void bind_dispatch(py::module_& m) {
  auto& t = dispatcher_type;
  t.tp_name = "libsection._core.Dispatcher";
  t.tp_basicsize = sizeof(Dispatcher);
  t.tp_flags = Py_TPFLAGS_HAVE_GC;
  t.tp_doc =
      "Dispatcher(miss): calls the compiled op for its arguments' types, found in a table keyed by "
      "each array's dtype, dimensions and byte order and each number's type; `miss(*args)` gives "
      "the compiled op for types not seen yet.";
  t.tp_new = c_entry<dispatcher_new>;
  t.tp_dealloc = dispatcher_dealloc;
  t.tp_traverse = dispatcher_traverse;
  t.tp_clear = dispatcher_clear;
  t.tp_methods = dispatcher_methods;
  t.tp_getset = dispatcher_getset;
  add_vectorcall_type(m, t, "Dispatcher", offsetof(Dispatcher, vectorcall));
}

}  // namespace section::python
