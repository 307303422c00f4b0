// The XLA FFI handler that runs a libsection node inside a compiled JAX computation.
//
// A support library of the linker core (`support_library_module`): built at run time (once per
// jaxlib: its FFI headers are not available when libsection is built) by libsection/_jax_ffi.py
// through the module cache, like any module, after the prelude and the export macros
// (LIBSECTION_EXPORT), and loaded the same way: the loader checks its ABI and runs its
// `libsection_module_init`. Python then hands it the function that answers its instantiate
// stage (`libsection_jax_connect`): the handler names no Python module.
//
// Two stages. Instantiate, once per call site when XLA makes an executable: the call's
// attributes name what it runs by values that mean the same in every process (the module's
// cache key, an instance token, the op's name, its params as text), and the function Python
// connected (libsection._jax_ffi.instantiate) answers with the node's CompiledOp (the live one
// that traced the call, or one loaded from the cache for a computation exported elsewhere),
// which the executable's state holds until XLA frees the executable. Execute, per call: XLA hands
// the node's inputs as dense row-major buffers and the result buffers to fill. The handler takes
// the GIL, wraps each input (each batch element under vmap) as a read-only NumPy array without
// copying (a copy in the node's own dtype where JAX canonicalised it: float64 is float32 with
// x64 off), calls the CompiledOp through its native entry (the one Numba calls), checks each
// output against the node's dtype and the result buffer's shape, and copies it there. A Python
// exception from the op is handed to the node's `report` (Python keeps it, to raise it in place
// of XLA's error: found by data, never by this text) and becomes an FFI error whose message, for
// people, names its class and the op. Under vmap, a node whose module has a batch entry gets its
// whole batch in one call of its `Batched` instead (one C loop over the rows, writing into the
// result buffers; see libsection/_batched.py ffi_batch), unless the op destroys an input or JAX
// canonicalised a dtype (then the handler goes per element).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// What answers the instantiate stage (libsection._jax_ffi.instantiate), set by
// `libsection_jax_connect`; a strong reference, for the process's lifetime.
PyObject* instantiate_function = nullptr;

using Entry = int (*)(PyObject*, PyObject* const*, PyObject**);

// Whether Python can still be called: not once the interpreter is finalising (XLA may free an
// executable, and with it a state, from a destructor that runs that late).
bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// Holds the GIL for a scope (the handler runs on XLA's threads, which never hold it).
struct Gil {
  PyGILState_STATE state = PyGILState_Ensure();
  ~Gil() { PyGILState_Release(state); }
};

// What one call site of an executable runs, from its instantiation to the executable's end:
// the node's CompiledOp, its native entry, the function the op's exceptions are reported to,
// and the node's Batched with its native entry (null when a batch runs per element).
struct NodeState {
  static ffi::TypeId id;  // set when _jax_ffi registers the type with XLA
  PyObject* op = nullptr;
  Entry entry = nullptr;
  PyObject* report = nullptr;
  PyObject* batched = nullptr;
  Entry batch_entry = nullptr;

  NodeState() = default;
  NodeState(NodeState const&) = delete;
  NodeState& operator=(NodeState const&) = delete;
  ~NodeState() {
    if (!python_alive()) return;  // the process is ending: nothing left to release
    Gil gil;
    Py_XDECREF(op);
    Py_XDECREF(report);
    Py_XDECREF(batched);
  }
};

ffi::TypeId NodeState::id = {};

// NumPy's type number of an XLA element type, or -1 (the Python side only lowers these).
int numpy_type(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::PRED: return NPY_BOOL;
    case ffi::DataType::S8: return NPY_INT8;
    case ffi::DataType::S16: return NPY_INT16;
    case ffi::DataType::S32: return NPY_INT32;
    case ffi::DataType::S64: return NPY_INT64;
    case ffi::DataType::U8: return NPY_UINT8;
    case ffi::DataType::U16: return NPY_UINT16;
    case ffi::DataType::U32: return NPY_UINT32;
    case ffi::DataType::U64: return NPY_UINT64;
    case ffi::DataType::F16: return NPY_HALF;
    case ffi::DataType::F32: return NPY_FLOAT32;
    case ffi::DataType::F64: return NPY_FLOAT64;
    case ffi::DataType::C64: return NPY_COMPLEX64;
    case ffi::DataType::C128: return NPY_COMPLEX128;
    default: return -1;
  }
}

// Whether `typenum` is one of the NumPy types above.
bool numpy_type_known(std::int64_t typenum) {
  switch (typenum) {
    case NPY_BOOL:
    case NPY_INT8:
    case NPY_INT16:
    case NPY_INT32:
    case NPY_INT64:
    case NPY_UINT8:
    case NPY_UINT16:
    case NPY_UINT32:
    case NPY_UINT64:
    case NPY_HALF:
    case NPY_FLOAT32:
    case NPY_FLOAT64:
    case NPY_COMPLEX64:
    case NPY_COMPLEX128: return true;
    default: return false;
  }
}

// A shape as Python prints a tuple: (2, 3), (5,), ().
std::string shape_text(npy_intp const* dims, int nd) {
  std::string s = "(";
  for (int i = 0; i < nd; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (nd == 1 ? ",)" : ")");
}

// NumPy's name of a dtype ("float64").
std::string dtype_name(int typenum) {
  std::string name = "dtype " + std::to_string(typenum);
  if (PyArray_Descr* descr = PyArray_DescrFromType(typenum)) {
    if (PyObject* s = PyObject_Str(reinterpret_cast<PyObject*>(descr))) {
      if (char const* u = PyUnicode_AsUTF8(s)) name = u;
      Py_DECREF(s);
    }
    Py_DECREF(descr);
  }
  PyErr_Clear();
  return name;
}

// One buffer's element layout: its type, the node's type for it, and the dimensions after the
// batch ones.
struct Slot {
  int typenum;   // the buffer's
  int declared;  // the node's: the C code's, which differs where JAX canonicalised the dtype
  int itemsize;
  std::vector<npy_intp> core;  // the element's own dimensions
  std::size_t element_bytes;   // bytes of one batch element
  char* data;
};

// Drops the references a batch element holds, at scope exit, and empties their slots: the
// vectors are reused along the batch, so nothing is allocated per element.
struct DropRefs {
  std::vector<PyObject*>& slots;
  ~DropRefs() {
    for (PyObject*& o : slots) {
      Py_XDECREF(o);
      o = nullptr;
    }
  }
};

// Fetches the Python exception set now: its class name and text; the exception itself is
// handed to `report` (the node's, which Python keeps it with, to raise it in place of XLA's
// error), when there is one.
void fetch_exception(PyObject* report, std::string& kind, std::string& text) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  kind = "Exception";
  if (type) kind = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (value) {
    if (traceback) PyException_SetTraceback(value, traceback);
    // XLA's text is UTF-8: a lone surrogate (a file name os.fsdecode made) is written escaped.
    if (PyObject* s = PyObject_Str(value)) {
      if (PyObject* utf8 = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace")) {
        text = PyBytes_AS_STRING(utf8);
        Py_DECREF(utf8);
      }
      Py_DECREF(s);
    }
  }
  PyErr_Clear();
  if (value && report) {
    PyObject* done = PyObject_CallOneArg(report, value);
    Py_XDECREF(done);
    PyErr_Clear();  // a report that fails leaves XLA's error as it is
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
}

// The error XLA reports for the Python exception set now, which `report` keeps.
ffi::Error python_error(PyObject* report, std::string const& op_name) {
  std::string kind, text;
  fetch_exception(report, kind, text);
  return ffi::Error::Internal(kind + " in " + op_name + ": " + text);
}

// Builds the Slot of every buffer; the batch shape comes from the first buffer.
ffi::Error layout(ffi::AnyBuffer const& buffer, std::int64_t core_ndim, std::int64_t declared,
                  Slot& slot, std::vector<std::int64_t>& batch, bool first) {
  auto dims = buffer.dimensions();
  slot.typenum = numpy_type(buffer.element_type());
  if (slot.typenum < 0) return ffi::Error::InvalidArgument("libsection: unsupported element type");
  // The node's dtype: the buffer's, or one JAX canonicalises to it (float64 to float32).
  slot.declared = static_cast<int>(declared);
  if (slot.declared != slot.typenum &&
      (!numpy_type_known(declared) || !PyArray_CanCastSafely(slot.typenum, slot.declared)))
    return ffi::Error::InvalidArgument("libsection: a buffer of " + dtype_name(slot.typenum) +
                                       " for a value of " + dtype_name(slot.declared));
  slot.itemsize = static_cast<int>(ffi::ByteWidth(buffer.element_type()));
  std::int64_t const rank = static_cast<std::int64_t>(dims.size());
  if (core_ndim > rank)
    return ffi::Error::InvalidArgument("libsection: buffer rank below the op's");
  std::int64_t const batch_ndim = rank - core_ndim;
  if (first) batch.assign(dims.begin(), dims.begin() + batch_ndim);
  else if (batch_ndim != static_cast<std::int64_t>(batch.size()) ||
           !std::equal(batch.begin(), batch.end(), dims.begin()))
    return ffi::Error::InvalidArgument("libsection: buffers with different batch shapes");
  slot.core.assign(dims.begin() + batch_ndim, dims.end());
  slot.element_bytes = static_cast<std::size_t>(slot.itemsize);
  for (npy_intp d : slot.core) slot.element_bytes *= static_cast<std::size_t>(d);
  slot.data = static_cast<char*>(buffer.untyped_data());
  return ffi::Error::Success();
}

// A read-only array over an element of a buffer, in the buffer's dtype.
PyObject* array_over(Slot const& s, char* data) {
  int flags = NPY_ARRAY_C_CONTIGUOUS;
  if (reinterpret_cast<std::uintptr_t>(data) % static_cast<std::uintptr_t>(s.itemsize) == 0)
    flags |= NPY_ARRAY_ALIGNED;
  return PyArray_New(&PyArray_Type, static_cast<int>(s.core.size()),
                     const_cast<npy_intp*>(s.core.data()), s.typenum, nullptr, data, 0, flags,
                     nullptr);
}

// The Python value the op's C code reads for one input element: a read-only array over XLA's
// buffer, or a copy of it for an input the op destroys, or a NumPy scalar for a scalar type;
// converted to the node's dtype where the buffer's differs.
PyObject* wrap_input(Slot const& s, char* data, bool tensor, bool copy) {
  if (s.declared == s.typenum && !tensor) {
    PyArray_Descr* descr = PyArray_DescrFromType(s.typenum);
    if (!descr) return nullptr;
    PyObject* scalar = PyArray_Scalar(data, descr, nullptr);
    Py_DECREF(descr);
    return scalar;
  }
  PyObject* view = array_over(s, data);
  if (!view) return nullptr;
  if (s.declared == s.typenum) {
    if (!copy) return view;
    PyObject* own = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(view), NPY_CORDER);
    Py_DECREF(view);
    return own;
  }
  PyObject* cast = PyArray_CastToType(reinterpret_cast<PyArrayObject*>(view),
                                      PyArray_DescrFromType(s.declared), 0);
  Py_DECREF(view);
  if (!cast || tensor) return cast;
  return PyArray_Return(reinterpret_cast<PyArrayObject*>(cast));  // a 0-d array's scalar
}

// A writable array over one element of a result buffer.
PyObject* writable_view(Slot const& s, char* data) {
  return PyArray_New(&PyArray_Type, static_cast<int>(s.core.size()),
                     const_cast<npy_intp*>(s.core.data()), s.typenum, nullptr, data, 0,
                     NPY_ARRAY_CARRAY, nullptr);
}

// After the op's call, an array over XLA's memory that the op kept (its struct holds it past
// the call, as an op remembering its previous input does) would be read after XLA reused the
// buffer: it gets a copy of its data, which it keeps alive as its base (it has none: XLA's
// memory has no owner NumPy knows).
int keep_a_copy(PyObject* kept) {
  auto* array = reinterpret_cast<PyArrayObject*>(kept);
  PyObject* copy = PyArray_NewCopy(array, NPY_CORDER);  // the view is C-contiguous: same strides
  if (!copy) return -1;
  reinterpret_cast<PyArrayObject_fields*>(kept)->data =
      PyArray_BYTES(reinterpret_cast<PyArrayObject*>(copy));
  return PyArray_SetBaseObject(array, copy);  // steals `copy`
}

// An array over one batch element of a buffer, re-pointed at the next element while nothing
// but this holds it (NumPy's array struct: the data pointer is the only field that changes).
class Reused {
 public:
  Reused() = default;
  Reused(Reused const&) = delete;
  Reused& operator=(Reused const&) = delete;
  ~Reused() { Py_XDECREF(array_); }

  PyObject* at(Slot const& s, char* data, bool writable) {
    if (array_ && Py_REFCNT(array_) == 1) {
      reinterpret_cast<PyArrayObject_fields*>(array_)->data = data;
      return array_;
    }
    Py_XDECREF(array_);
    array_ = writable ? writable_view(s, data) : array_over(s, data);
    return array_;
  }

  // After the op's call: an array the op kept is given its own data (`keep_a_copy`) and left
  // to the op; the next call makes a new one.
  int let_go_if_kept() {
    if (!array_ || Py_REFCNT(array_) == 1) return 0;
    int const failed = keep_a_copy(array_);
    Py_DECREF(array_);
    array_ = nullptr;
    return failed;
  }

 private:
  PyObject* array_ = nullptr;
};

// `Reused::let_go_if_kept` for every input view: 0, or -1 with a Python exception set. With
// `keep_error`, the exception already set (the op's call failed) is kept and NumPy is called
// with none pending.
int let_go_of_kept_inputs(std::vector<Reused>& views, bool keep_error) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  if (keep_error) PyErr_Fetch(&type, &value, &traceback);
  int failed = 0;
  for (auto& view : views)
    if ((failed = view.let_go_if_kept()) != 0) break;
  if (keep_error) {
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
  }
  return failed;
}

// Checks one output of the op against the node's dtype and the result buffer's shape, and
// copies it there (rounded to the buffer's dtype where JAX canonicalised it): 0, or -1 with a
// Python exception set (TypeError for a wrong kind or dtype, ValueError for a wrong shape).
int store_output(PyObject* out, Slot const& s, char* data, bool tensor, std::string const& op_name,
                 std::size_t j) {
  std::string const where = op_name + ": output " + std::to_string(j);
  auto fail = [](PyObject* type, std::string const& message) {
    PyErr_SetString(type, message.c_str());
    return -1;
  };
  if (!tensor) {
    PyArray_Descr* descr = PyArray_IsScalar(out, Generic) ? PyArray_DescrFromScalar(out) : nullptr;
    bool const same = descr && descr->type_num == s.declared;
    Py_XDECREF(descr);
    if (!same)
      return fail(PyExc_TypeError, where + " is not a " + dtype_name(s.declared) + " scalar");
    PyArray_Descr* target = PyArray_DescrFromType(s.typenum);
    int const cast = target ? PyArray_CastScalarToCtype(out, data, target) : -1;
    Py_XDECREF(target);
    return cast;
  }
  if (!PyArray_Check(out))
    return fail(PyExc_TypeError, where + " is " + Py_TYPE(out)->tp_name + ", not an array");
  auto* a = reinterpret_cast<PyArrayObject*>(out);
  if (!PyArray_EquivTypenums(PyArray_TYPE(a), s.declared))
    return fail(PyExc_TypeError, where + " has dtype " + dtype_name(PyArray_TYPE(a)) +
                                     ", the node declares " + dtype_name(s.declared));
  int const nd = PyArray_NDIM(a);
  bool const same_shape = nd == static_cast<int>(s.core.size()) &&
                          std::equal(s.core.begin(), s.core.end(), PyArray_DIMS(a));
  if (!same_shape)
    return fail(PyExc_ValueError, where + " has shape " + shape_text(PyArray_DIMS(a), nd) +
                                      ", but the op's infer_shape gives " +
                                      shape_text(s.core.data(), static_cast<int>(s.core.size())) +
                                      " (the shape JAX allocated for it)");
  if (s.declared == s.typenum && PyArray_IS_C_CONTIGUOUS(a)) {
    std::memcpy(data, PyArray_DATA(a), s.element_bytes);
    return 0;
  }
  PyObject* target = PyArray_New(&PyArray_Type, nd, PyArray_DIMS(a), s.typenum, nullptr, data, 0,
                                 NPY_ARRAY_CARRAY, nullptr);
  int const copied = target ? PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(target), a) : -1;
  Py_XDECREF(target);
  return copied;
}

// The attributes of every call, bound by both stages (XLA decodes a call's attributes as one
// set). See libsection/_jax_ffi.py call_node.
template <class Binding>
auto with_call_attributes(Binding binding) {
  using Ints = ffi::Span<std::int64_t const>;
  return std::move(binding)
      .template Attr<std::string_view>("module")
      .template Attr<std::string_view>("instance")
      .template Attr<std::string_view>("name")
      .template Attr<std::string_view>("params")
      .template Attr<Ints>("in_ndims")
      .template Attr<Ints>("in_kinds")
      .template Attr<Ints>("in_types")
      .template Attr<Ints>("out_ndims")
      .template Attr<Ints>("out_kinds")
      .template Attr<Ints>("out_types")
      .template Attr<std::int64_t>("batch");
}

using Span = ffi::Span<std::int64_t const>;

// A tuple of Python ints (a new reference), or null with a Python exception set.
PyObject* int_tuple(Span values) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(values.size()));
  for (std::size_t i = 0; tuple && i < values.size(); ++i) {
    PyObject* value = PyLong_FromLongLong(values[i]);
    if (!value) Py_CLEAR(tuple);
    else PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), value);
  }
  return tuple;
}

// The instantiate stage: the CompiledOp this call site runs, from the connected function,
// libsection._jax_ffi.instantiate(module, instance, name, params, in_ndims, out_ndims, batch),
// which returns (op, native entry address, report, Batched or None, its entry address).
ffi::ErrorOr<std::unique_ptr<NodeState>> instantiate(std::string_view module,
                                                     std::string_view instance,
                                                     std::string_view name, std::string_view params,
                                                     Span in_ndims, Span, Span, Span out_ndims,
                                                     Span, Span, std::int64_t batch) try {
  if (!python_alive())
    return ffi::Error(ffi::ErrorCode::kFailedPrecondition,
                      "libsection: the Python interpreter has finished");
  Gil gil;
  std::string const op_name(name);
  PyObject* result = nullptr;
  if (!instantiate_function)
    return ffi::Error(ffi::ErrorCode::kFailedPrecondition,
                      "libsection: the handler was not connected (libsection_jax_connect)");
  // "N": the call takes the tuples' references (null ones fail it, their exception kept).
  result = PyObject_CallFunction(
      instantiate_function, "s#s#s#s#NNL", module.data(), static_cast<Py_ssize_t>(module.size()),
      instance.data(), static_cast<Py_ssize_t>(instance.size()), name.data(),
      static_cast<Py_ssize_t>(name.size()), params.data(), static_cast<Py_ssize_t>(params.size()),
      int_tuple(in_ndims), int_tuple(out_ndims), static_cast<long long>(batch));
  auto state = std::make_unique<NodeState>();
  PyObject *op = nullptr, *entry = nullptr, *report = nullptr, *batched = nullptr,
           *batch_entry = nullptr;
  if (!result || !PyArg_ParseTuple(result, "OOOOO", &op, &entry, &report, &batched, &batch_entry)) {
    Py_XDECREF(result);
    std::string kind, text;
    fetch_exception(nullptr, kind, text);
    return ffi::Error::Internal(kind + " in " + op_name + ": " + text);
  }
  state->entry = reinterpret_cast<Entry>(PyLong_AsVoidPtr(entry));
  Py_INCREF(op);
  Py_INCREF(report);
  state->op = op;
  state->report = report;
  if (batched != Py_None) {
    state->batch_entry = reinterpret_cast<Entry>(PyLong_AsVoidPtr(batch_entry));
    Py_INCREF(batched);
    state->batched = batched;
  }
  Py_DECREF(result);
  return state;
} catch (...) {  // XLA calls the handler from C: no C++ exception may leave it
  return ffi::Error::Internal("libsection: a C++ exception in the handler (out of memory?)");
}

// One call's buffers (their slots), the kinds of its values and the arrays moved along its
// batch; made and dropped with the GIL held (it holds arrays).
struct Call {
  Call(std::size_t n_in, std::size_t n_out, Span in_kinds, Span out_kinds, NodeState const& node,
       std::string_view name)
      : in(n_in), out(n_out), in_kinds(in_kinds), out_kinds(out_kinds), node(node), op_name(name),
        inputs(n_in), outputs(n_out), views(n_out), copies(n_in), in_views(n_in), out_views(n_out) {
  }

  std::vector<Slot> in, out;
  std::vector<std::int64_t> batch;  // the batch dimensions (none outside vmap)
  Span in_kinds, out_kinds;         // 0 scalar, 1 tensor, 2 tensor input the op destroys (a copy)
  NodeState const& node;
  std::string op_name;
  std::vector<PyObject*> inputs, outputs, views, copies;
  // One array per buffer, moved along the batch: a new one only when the op kept a reference
  // to the last (it is then the op's, and must not change under it).
  std::vector<Reused> in_views, out_views;

  ffi::Error failed() const { return python_error(node.report, op_name); }
};

// Lays out every buffer of the call (Slot, batch) and returns the number of batch elements.
ffi::ErrorOr<std::size_t> lay_out(Call& call, ffi::RemainingArgs const& args,
                                  ffi::RemainingRets const& rets, Span in_ndims, Span in_types,
                                  Span out_ndims, Span out_types) {
  std::vector<std::int64_t>& batch = call.batch;
  for (std::size_t i = 0; i < call.in.size(); ++i) {
    auto buffer = args.get<ffi::AnyBuffer>(i);
    if (buffer.has_error()) return buffer.error();
    if (auto e = layout(*buffer, in_ndims[i], in_types[i], call.in[i], batch, i == 0); e.failure())
      return e;
  }
  for (std::size_t j = 0; j < call.out.size(); ++j) {
    auto buffer = rets.get<ffi::AnyBuffer>(j);
    if (buffer.has_error()) return buffer.error();
    bool const first = call.in.empty() && j == 0;
    if (auto e = layout(**buffer, out_ndims[j], out_types[j], call.out[j], batch, first);
        e.failure())
      return e;
  }
  std::size_t n_batch = 1;
  for (std::int64_t b : batch) n_batch *= static_cast<std::size_t>(b);
  return n_batch;
}

// The node on batch element `b`: its inputs wrapped, the C code called, its outputs stored.
ffi::Error run_element(Call& call, std::size_t b) {
  DropRefs held{call.copies};  // the inputs made for this element (scalars, copies)
  for (std::size_t i = 0; i < call.in.size(); ++i) {
    Slot const& s = call.in[i];
    char* data = s.data + b * s.element_bytes;
    if (call.in_kinds[i] == 1 && s.declared == s.typenum) {
      call.inputs[i] = call.in_views[i].at(s, data, false);
    } else {
      call.inputs[i] = call.copies[i] =
          wrap_input(s, data, call.in_kinds[i] != 0, call.in_kinds[i] == 2);
    }
    if (!call.inputs[i]) return call.failed();
  }
  // Arrays over the result buffers: an op that writes into the outputs it is given (as it
  // reuses its own) writes straight into XLA's memory, where the dtypes agree.
  for (std::size_t j = 0; j < call.out.size(); ++j) {
    Slot const& s = call.out[j];
    bool const direct = call.out_kinds[j] != 0 && s.declared == s.typenum;
    char* data = s.data + b * s.element_bytes;
    call.views[j] = call.outputs[j] = direct ? call.out_views[j].at(s, data, true) : nullptr;
    if (direct && !call.outputs[j]) return call.failed();
  }
  bool const call_failed =
      call.node.entry(call.node.op, call.inputs.data(), call.outputs.data()) != 0;
  // An input the op kept gets its own data whether its call succeeded or failed (an op may
  // store its input, then fail); a failed call's exception is the one raised, and its outputs
  // are not references of ours.
  int const keeping_failed = let_go_of_kept_inputs(call.in_views, call_failed);
  if (call_failed) return call.failed();
  DropRefs results{call.outputs};
  if (keeping_failed != 0) return call.failed();
  for (std::size_t j = 0; j < call.out.size(); ++j) {
    Slot const& s = call.out[j];
    if (call.outputs[j] == call.views[j] && call.views[j]) continue;  // written in place
    if (store_output(call.outputs[j], s, s.data + b * s.element_bytes, call.out_kinds[j] != 0,
                     call.op_name, j) != 0)
      return call.failed();
  }
  return ffi::Error::Success();
}

// An array over a whole buffer: its batch dimensions and its element's.
PyObject* whole_view(Slot const& s, std::vector<std::int64_t> const& batch, bool writable) {
  std::vector<npy_intp> dims(batch.begin(), batch.end());
  dims.insert(dims.end(), s.core.begin(), s.core.end());
  int flags = writable ? NPY_ARRAY_CARRAY : NPY_ARRAY_C_CONTIGUOUS;
  if (reinterpret_cast<std::uintptr_t>(s.data) % static_cast<std::uintptr_t>(s.itemsize) == 0)
    flags |= NPY_ARRAY_ALIGNED;
  return PyArray_New(&PyArray_Type, static_cast<int>(dims.size()), dims.data(), s.typenum, nullptr,
                     s.data, 0, flags, nullptr);
}

// Whether the call's batch can go to the node's Batched: there is a batch, and every buffer is
// in the node's dtype (the C loop reads and writes XLA's memory as it is).
bool batches_whole(Call const& call) {
  auto own = [](Slot const& s) { return s.declared == s.typenum; };
  return call.node.batched && call.node.batch_entry && !call.batch.empty() &&
         std::all_of(call.in.begin(), call.in.end(), own) &&
         std::all_of(call.out.begin(), call.out.end(), own);
}

// The whole batch in one call of the node's Batched (its C loop over the rows), which writes the
// results into the arrays over XLA's result buffers it is given.
ffi::Error run_batch(Call& call) {
  DropRefs held_inputs{call.inputs}, held_given{call.views};
  for (std::size_t i = 0; i < call.in.size(); ++i)
    if (!(call.inputs[i] = whole_view(call.in[i], call.batch, false))) return call.failed();
  for (std::size_t j = 0; j < call.out.size(); ++j)
    if (!(call.views[j] = whole_view(call.out[j], call.batch, true))) return call.failed();
  call.outputs = call.views;  // borrowed presets in; new references out, on success
  if (call.node.batch_entry(call.node.batched, call.inputs.data(), call.outputs.data()) != 0)
    return call.failed();
  DropRefs results{call.outputs};  // the arrays given, written
  return ffi::Error::Success();
}

// The execute stage: the node on this call's buffers, its batch in one call of its Batched or
// once per batch element.
ffi::Error execute(NodeState* state, ffi::RemainingArgs args, ffi::RemainingRets rets,
                   std::string_view, std::string_view, std::string_view name, std::string_view,
                   Span in_ndims, Span in_kinds, Span in_types, Span out_ndims, Span out_kinds,
                   Span out_types, std::int64_t) try {
  std::size_t const n_in = args.size(), n_out = rets.size();
  if (in_ndims.size() != n_in || in_kinds.size() != n_in || in_types.size() != n_in ||
      out_ndims.size() != n_out || out_kinds.size() != n_out || out_types.size() != n_out)
    return ffi::Error::InvalidArgument("libsection: the call's attributes do not fit its buffers");
  if (!state || !state->op || !state->entry)
    return ffi::Error(ffi::ErrorCode::kFailedPrecondition,
                      "libsection: the call was not instantiated");
  Gil gil;
  Call call(n_in, n_out, in_kinds, out_kinds, *state, name);
  auto n_batch = lay_out(call, args, rets, in_ndims, in_types, out_ndims, out_types);
  if (n_batch.has_error()) return n_batch.error();
  if (batches_whole(call)) return run_batch(call);
  for (std::size_t b = 0; b < *n_batch; ++b)
    if (auto e = run_element(call, b); e.failure()) return e;
  return ffi::Error::Success();
} catch (...) {  // XLA calls the handler from C: no C++ exception may leave it
  return ffi::Error::Internal("libsection: a C++ exception in the handler (out of memory?)");
}

// How XLA destroys a state (with the executable that holds it).
XLA_FFI_TypeInfo const node_state_info = {XLA_FFI_TypeInfo_STRUCT_SIZE, nullptr, [](void* state) {
                                            delete static_cast<NodeState*>(state);
                                          }};

// XLA asks each stage's handler for its metadata when the target is registered, and refuses a
// stateful handler whose state type it does not know yet. The type is registered here, through
// the API that asks: jax.ffi.register_ffi_type would do it from Python, but JAX defers it until
// its CPU client starts and then applies it after the targets it deferred too, too late.
XLA_FFI_Error* ensure_state_type(XLA_FFI_CallFrame* frame) {
  if (NodeState::id.type_id != XLA_FFI_UNKNOWN_TYPE_ID.type_id) return nullptr;
  return ffi::Ffi::RegisterTypeId(frame->api, "libsection_node_state", &NodeState::id,
                                  &node_state_info);
}

}  // namespace

XLA_FFI_DEFINE_HANDLER(libsection_node_instantiate, instantiate,
                       with_call_attributes(ffi::Ffi::BindInstantiate()));

XLA_FFI_DEFINE_HANDLER(
    libsection_node_execute, execute,
    with_call_attributes(
        ffi::Ffi::Bind().Ctx<ffi::State<NodeState>>().RemainingArgs().RemainingRets()));

LIBSECTION_EXPORT XLA_FFI_Error* libsection_jax_instantiate(XLA_FFI_CallFrame* frame) {
  if (XLA_FFI_Error* error = ensure_state_type(frame)) return error;
  return libsection_node_instantiate(frame);
}
LIBSECTION_EXPORT XLA_FFI_Error* libsection_jax_execute(XLA_FFI_CallFrame* frame) {
  if (XLA_FFI_Error* error = ensure_state_type(frame)) return error;
  return libsection_node_execute(frame);
}

// What the loader asks of a support library: its ABI, and its initialisation, which takes
// NumPy's API table from the runtime's (as every module does).
LIBSECTION_EXPORT int libsection_abi_version(void) { return LIBSECTION_MODULE_ABI; }
LIBSECTION_EXPORT PyObject* libsection_module_init(const void* runtime) {
  LIBSECTION_USE_RUNTIME_NUMPY(static_cast<const libsection_runtime*>(runtime));
  return Py_None;
}

// Python hands the handler the function that answers its instantiate stage (called with the
// GIL held, through ctypes.pythonapi's convention): 0, or -1 with a Python exception set.
LIBSECTION_EXPORT int libsection_jax_connect(PyObject* instantiate) {
  if (!PyCallable_Check(instantiate)) {
    PyErr_SetString(PyExc_TypeError, "libsection_jax_connect takes a callable");
    return -1;
  }
  Py_INCREF(instantiate);
  Py_XSETREF(instantiate_function, instantiate);
  return 0;
}
