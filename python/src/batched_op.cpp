// `Batched`: a CompiledOp and the plan of its batches (what batch.c reads: the core dimensions
// of each input and output, as a signature names them, and how batch dimensions broadcast).
// Calling it runs the module's batch entry: one C loop over the rows, the instance taken once.
#include "batched_op.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "c_entry.hpp"
#include "compiled_op.hpp"
#include "vectorcall_type.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

struct BatchedOp {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* compiled;  // the CompiledOp
  Py_ssize_t n_inputs, n_outputs;
  std::vector<long long>* plan;
  std::vector<std::string>* label_texts;
  std::vector<char const*>* labels;  // into label_texts
};

PyTypeObject batched_op_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

/// The length of a plan for these inputs and outputs, and its dimension names; throws
/// `ValueError` for a plan the runtime could misread.
std::size_t check_plan(std::vector<long long> const& plan, Py_ssize_t n_in, Py_ssize_t n_out,
                       std::size_t n_labels) {
  auto bad = [](std::string const& why) { return py::value_error("Batched: plan " + why); };
  if (plan.size() < 2) throw bad("too short");
  long long const names = plan[1];
  if (names < 0 || names > 64 || n_labels != static_cast<std::size_t>(2 + names))
    throw bad("and labels disagree on the dimension names");
  std::size_t at = 2;
  for (Py_ssize_t c = 0; c < n_in + n_out; ++c) {
    if (at >= plan.size()) throw bad("too short");
    if (plan[at] < 0 || plan[at] > 64) throw bad("has a bad core ndim");
    std::size_t const end = at + 1 + static_cast<std::size_t>(plan[at]);
    if (end > plan.size()) throw bad("too short");
    for (std::size_t k = at + 1; k < end; ++k)
      if (plan[k] >= names) throw bad("names a dimension it does not have");
    at = end + (c < n_in ? 1 : 0);  // an input's broadcast mask
  }
  if (at != plan.size()) throw bad("too long");
  return at;
}

int run(BatchedOp* self, PyObject* const* inputs, PyObject** outputs) {
  return run_batch(self->compiled, inputs, outputs, self->plan->data(), self->labels->data());
}

PyObject* batched_call(PyObject* callable, PyObject* const* args, size_t nargsf,
                       PyObject* kwnames) {
  auto* self = reinterpret_cast<BatchedOp*>(callable);
  Py_ssize_t const nargs = PyVectorcall_NARGS(nargsf);
  if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs != self->n_inputs) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd positional input%s, got %zd", (*self->labels)[0],
                 self->n_inputs, self->n_inputs == 1 ? "" : "s", nargs);
    return nullptr;
  }
  std::vector<PyObject*> outputs(static_cast<std::size_t>(self->n_outputs), nullptr);
  if (run(self, args, outputs.data()) != 0) return nullptr;
  if (self->n_outputs == 1) return outputs[0];
  PyObject* result = PyTuple_New(self->n_outputs);
  for (Py_ssize_t j = 0; j < self->n_outputs; ++j) {
    if (result) PyTuple_SET_ITEM(result, j, outputs[static_cast<std::size_t>(j)]);
    else Py_DECREF(outputs[static_cast<std::size_t>(j)]);
  }
  return result;
}

PyObject* batched_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *compiled = nullptr, *plan_arg = nullptr, *labels_arg = nullptr;
  static char const* names[] = {"compiled", "plan", "labels", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:Batched", const_cast<char**>(names),
                                   &compiled, &plan_arg, &labels_arg))
    return nullptr;
  try {
    auto counts = batch_entry_of(compiled);
    if (!counts)
      throw py::type_error(
          "Batched: takes a CompiledOp whose module has a batch entry (every input and output "
          "an array or a scalar of a built-in type), not " +
          std::string(py::repr(compiled)));
    auto plan = py::cast<std::vector<long long>>(plan_arg);
    auto labels = py::cast<std::vector<std::string>>(labels_arg);
    check_plan(plan, counts->first, counts->second, labels.size());
    auto* self = reinterpret_cast<BatchedOp*>(type->tp_alloc(type, 0));
    if (!self) return nullptr;
    self->vectorcall = c_entry<batched_call>;
    self->compiled = Py_NewRef(compiled);
    self->n_inputs = counts->first;
    self->n_outputs = counts->second;
    self->plan = new std::vector<long long>(std::move(plan));
    self->label_texts = new std::vector<std::string>(std::move(labels));
    self->labels = new std::vector<char const*>;
    for (auto const& text : *self->label_texts) self->labels->push_back(text.c_str());
    return reinterpret_cast<PyObject*>(self);
  } catch (py::cast_error const& e) {  // other exceptions: c_entry's
    PyErr_SetString(PyExc_TypeError, (std::string("Batched: ") + e.what()).c_str());
  }
  return nullptr;
}

void batched_dealloc(PyObject* object) {
  auto* self = reinterpret_cast<BatchedOp*>(object);
  Py_XDECREF(self->compiled);
  delete self->plan;
  delete self->labels;
  delete self->label_texts;
  Py_TYPE(object)->tp_free(object);
}

PyObject* batched_repr(PyObject* object) {
  auto* self = reinterpret_cast<BatchedOp*>(object);
  return PyUnicode_FromFormat("<libsection batched op %s %s>", (*self->labels)[0],
                              (*self->labels)[1]);
}

PyObject* batched_compiled(PyObject* object, void*) {
  return Py_NewRef(reinterpret_cast<BatchedOp*>(object)->compiled);
}

// ---- PyTensor's VM: a C thunk over the node's storage cells --------------------------------

/// What the VM hands the thunk (CLinker's layout: the error list first), and the cells.
struct BatchedThunkData {
  PyObject* error;                         // a three-element list
  PyObject* op;                            // the Batched
  std::vector<PyObject*> inputs, outputs;  // one-element lists
};

int run_batched_cthunk(void* data) {
  auto* d = static_cast<BatchedThunkData*>(data);
  auto* self = reinterpret_cast<BatchedOp*>(d->op);
  PyObject* small_in[8];
  PyObject* small_out[8] = {};
  std::vector<PyObject*> many_in, many_out;
  PyObject** inputs = small_in;
  PyObject** outputs = small_out;
  if (d->inputs.size() > 8 || d->outputs.size() > 8) {
    many_in.resize(d->inputs.size());
    many_out.assign(d->outputs.size(), nullptr);
    inputs = many_in.data();
    outputs = many_out.data();
  }
  for (std::size_t i = 0; i < d->inputs.size(); ++i) inputs[i] = PyList_GET_ITEM(d->inputs[i], 0);
  if (run(self, inputs, outputs) == 0) {
    for (std::size_t j = 0; j < d->outputs.size(); ++j) {
      PyObject* old = PyList_GET_ITEM(d->outputs[j], 0);
      PyList_SET_ITEM(d->outputs[j], 0, outputs[j]);  // steals
      Py_XDECREF(old);
    }
    return 0;
  }
  move_error_to_vm(d->error);
  return 1;
}

void free_batched_cthunk(PyObject* capsule) {
  auto* d = static_cast<BatchedThunkData*>(PyCapsule_GetContext(capsule));
  if (!d) return;
  Py_XDECREF(d->error);
  Py_XDECREF(d->op);
  for (PyObject* cell : d->inputs) Py_XDECREF(cell);
  for (PyObject* cell : d->outputs) Py_XDECREF(cell);
  delete d;
}

PyObject* batched_cthunk(PyObject* object, PyObject* args) {
  auto* self = reinterpret_cast<BatchedOp*>(object);
  PyObject *in = nullptr, *out = nullptr;
  if (!PyArg_ParseTuple(args, "OO:cthunk", &in, &out)) return nullptr;
  auto cells = [](PyObject* list, Py_ssize_t n, std::vector<PyObject*>& into) {
    if (!PyList_Check(list) || PyList_GET_SIZE(list) != n) return false;
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* cell = PyList_GET_ITEM(list, i);
      if (!PyList_CheckExact(cell) || PyList_GET_SIZE(cell) != 1) return false;
      into.push_back(Py_NewRef(cell));
    }
    return true;
  };
  auto* d = new (std::nothrow) BatchedThunkData{PyList_New(3), Py_NewRef(object), {}, {}};
  if (!d) return PyErr_NoMemory();
  PyObject* capsule = nullptr;
  if (!d->error) goto fail;
  for (Py_ssize_t i = 0; i < 3; ++i) PyList_SET_ITEM(d->error, i, Py_NewRef(Py_None));
  if (!cells(in, self->n_inputs, d->inputs) || !cells(out, self->n_outputs, d->outputs)) {
    PyErr_Format(PyExc_TypeError,
                 "cthunk(inputs, outputs): %zd and %zd one-element lists (storage cells)",
                 self->n_inputs, self->n_outputs);
    goto fail;
  }
  capsule = PyCapsule_New(reinterpret_cast<void*>(c_entry<run_batched_cthunk>), nullptr,
                          free_batched_cthunk);
  if (capsule && PyCapsule_SetContext(capsule, d) == 0) return capsule;
  Py_XDECREF(capsule);  // its destructor finds no context: `d` is freed below
fail:
  Py_XDECREF(d->error);
  Py_DECREF(d->op);
  for (PyObject* cell : d->inputs) Py_DECREF(cell);
  for (PyObject* cell : d->outputs) Py_DECREF(cell);
  delete d;
  return nullptr;
}

PyMethodDef batched_methods[] = {
    {"cthunk", c_entry<batched_cthunk>, METH_VARARGS,
     "cthunk(inputs, outputs): a capsule PyTensor's VM calls natively (CLinker's convention), "
     "running the batch on the values of the `inputs` storage cells and storing the outputs in "
     "the `outputs` cells. Keep it as the thunk's `cthunk` attribute."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef batched_getset[] = {
    {"compiled", batched_compiled, nullptr, "The CompiledOp whose rows this runs.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---- native entries (Numba's code and the JAX handler) -------------------------------------

int batched_run_native(PyObject* callable, PyObject* const* inputs, PyObject** outputs) {
  auto* self = reinterpret_cast<BatchedOp*>(callable);
  for (Py_ssize_t j = 0; j < self->n_outputs; ++j) outputs[j] = nullptr;
  return run(self, inputs, outputs);
}

/// `outputs` holds, on entry, the arrays to write into (XLA's result buffers).
int batched_run_native_into(PyObject* callable, PyObject* const* inputs, PyObject** outputs) {
  return run(reinterpret_cast<BatchedOp*>(callable), inputs, outputs);
}

}  // namespace

bool is_batched_op(py::handle op) { return PyObject_TypeCheck(op.ptr(), &batched_op_type); }

py::tuple batched_native_entry(py::handle op) {
  auto* self = reinterpret_cast<BatchedOp*>(op.ptr());
  return py::make_tuple(reinterpret_cast<std::uintptr_t>(c_entry<batched_run_native>),
                        reinterpret_cast<std::uintptr_t>(op.ptr()), self->n_inputs, self->n_outputs,
                        reinterpret_cast<std::uintptr_t>(c_entry<batched_run_native_into>));
}

void add_batched_op_type(py::module_& m) {
  auto& t = batched_op_type;
  t.tp_name = "libsection._core.Batched";
  t.tp_basicsize = sizeof(BatchedOp);
  t.tp_doc =
      "Batched(compiled, plan, labels): `compiled` (a CompiledOp with a batch entry) run once "
      "per row of inputs with leading batch dimensions, in one C loop. `plan` and `labels` say "
      "what the signature does (python/libsection/_batched.py makes them). Called with the "
      "batch's inputs, returns its outputs (a tuple when there are several).";
  t.tp_new = c_entry<batched_new>;
  t.tp_dealloc = batched_dealloc;
  t.tp_repr = batched_repr;
  t.tp_methods = batched_methods;
  t.tp_getset = batched_getset;
  add_vectorcall_type(m, t, "Batched", offsetof(BatchedOp, vectorcall));
}

}  // namespace section::python
