// `Batched`: a CompiledOp and the plan of its batches (the linker's `BatchPlan`, which batch.c
// reads). Calling it runs the module's batch entry: one C loop over the rows, the instance taken
// once.
#include "batched_op.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "c_entry.hpp"
#include "compiled_op.hpp"
#include "section/linker/generate/batch_plan.hpp"
#include "vectorcall_type.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

struct BatchedOp {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* compiled;  // the CompiledOp
  Py_ssize_t n_inputs, n_outputs;
  BatchPlan* plan;
};

PyTypeObject batched_op_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

int run(BatchedOp* self, PyObject* const* inputs, PyObject** outputs) {
  return run_batch(self->compiled, inputs, outputs, self->plan->values(), self->plan->labels());
}

PyObject* batched_call(PyObject* callable, PyObject* const* args, size_t nargsf,
                       PyObject* kwnames) {
  auto* self = reinterpret_cast<BatchedOp*>(callable);
  Py_ssize_t const nargs = PyVectorcall_NARGS(nargsf);
  if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs != self->n_inputs) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd positional input%s, got %zd",
                 self->plan->op_name().c_str(), self->n_inputs, self->n_inputs == 1 ? "" : "s",
                 nargs);
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
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:Batched", const_cast<char**>(names),
                                   &compiled, &plan_arg, &labels_arg))
    return nullptr;
  try {
    auto counts = batch_entry_of(compiled);
    if (!counts)
      throw py::type_error(
          "Batched: takes a CompiledOp whose module has a batch entry (every input and output "
          "an array or a scalar of a built-in type), not " +
          std::string(py::repr(compiled)));
    // A `BatchPlan`, or its layout as values and labels (checked as the runtime reads it).
    std::unique_ptr<BatchPlan> plan;
    if (labels_arg)
      plan = std::make_unique<BatchPlan>(
          BatchPlan::from_layout(py::cast<std::vector<long long>>(plan_arg),
                                 py::cast<std::vector<std::string>>(labels_arg)));
    else plan = std::make_unique<BatchPlan>(py::cast<BatchPlan const&>(plan_arg));
    plan->check_counts(static_cast<std::size_t>(counts->first),
                       static_cast<std::size_t>(counts->second));
    auto* self = reinterpret_cast<BatchedOp*>(type->tp_alloc(type, 0));
    if (!self) return nullptr;
    self->vectorcall = c_entry<batched_call>;
    self->compiled = Py_NewRef(compiled);
    self->n_inputs = counts->first;
    self->n_outputs = counts->second;
    self->plan = plan.release();
    return reinterpret_cast<PyObject*>(self);
  } catch (py::cast_error const& e) {  // other exceptions: c_entry's
    PyErr_SetString(PyExc_TypeError, (std::string("Batched: ") + e.what()).c_str());
  } catch (std::invalid_argument const& e) {
    PyErr_SetString(PyExc_ValueError, (std::string("Batched: ") + e.what()).c_str());
  }
  return nullptr;
}

void batched_dealloc(PyObject* object) {
  auto* self = reinterpret_cast<BatchedOp*>(object);
  Py_XDECREF(self->compiled);
  delete self->plan;
  Py_TYPE(object)->tp_free(object);
}

PyObject* batched_repr(PyObject* object) {
  auto* self = reinterpret_cast<BatchedOp*>(object);
  return PyUnicode_FromFormat("<libsection batched op %s %s>", self->plan->op_name().c_str(),
                              self->plan->signature().c_str());
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
      "Batched(compiled, plan): `compiled` (a CompiledOp with a batch entry) run once per row "
      "of inputs with leading batch dimensions, in one C loop, as `plan` (a BatchPlan) says. "
      "Called with the batch's inputs, returns its outputs (a tuple when there are several).";
  t.tp_new = c_entry<batched_new>;
  t.tp_dealloc = batched_dealloc;
  t.tp_repr = batched_repr;
  t.tp_methods = batched_methods;
  t.tp_getset = batched_getset;
  add_vectorcall_type(m, t, "Batched", offsetof(BatchedOp, vectorcall));
}

}  // namespace section::python
