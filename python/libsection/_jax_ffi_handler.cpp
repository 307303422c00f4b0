// The XLA FFI handler that runs a libsection node inside a compiled JAX computation.
//
// Built at run time (once per jaxlib: its FFI headers are not available when libsection is
// built) by libsection/_jax_ffi.py through the module cache, like any module, and loaded the
// same way: the libsection_* entry points below let the loader check and initialise it.
//
// One call: XLA hands the node's inputs as dense row-major buffers and the result buffers to
// fill. The handler takes the GIL, wraps each input as a read-only NumPy array without
// copying, calls the node's CompiledOp through its native entry (the one Numba calls), checks
// each output against the result buffer's dtype and shape, and copies it there. Under vmap, a
// node whose module has a batch entry gets the whole batch in one call of its `Batched`
// (`batch_entry`, `batch_op`: one C loop over the rows, writing into the result buffers);
// another (scalar inputs, inputs it destroys) gets one call per batch element. A Python exception
// from the op becomes an FFI error whose message carries the exception's class, the op's name and a
// token by which Python finds the exception itself.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

#define LIBSECTION_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Entry = int (*)(PyObject*, PyObject* const*, PyObject**);

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

// One buffer's element layout: its type and the dimensions after the batch ones.
struct Slot {
  int typenum;
  int itemsize;
  std::vector<npy_intp> core;  // the element's own dimensions
  std::size_t element_bytes;   // bytes of one batch element
  char* data;
};

// Holds the GIL for a scope (the handler runs on XLA's threads, which never hold it).
struct Gil {
  PyGILState_STATE state = PyGILState_Ensure();
  ~Gil() { PyGILState_Release(state); }
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

// The error XLA reports for the Python exception set now (which is kept in `errors`, a list
// the Python side owns, so it can raise the exception itself).
ffi::Error python_error(PyObject* errors, std::string const& op_name) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string kind = "Exception", text;
  if (type) kind = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (value) {
    if (traceback) PyException_SetTraceback(value, traceback);
    if (PyObject* s = PyObject_Str(value)) {
      if (char const* u = PyUnicode_AsUTF8(s)) text = u;
      Py_DECREF(s);
    }
  }
  PyErr_Clear();
  Py_ssize_t token = -1;
  if (value && errors && PyList_Check(errors)) {
    if (PyList_GET_SIZE(errors) >= 64) PyList_SetSlice(errors, 0, 32, nullptr);  // bounded
    if (PyList_Append(errors, value) == 0) token = PyList_GET_SIZE(errors) - 1;
    PyErr_Clear();
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  std::string message = "[libsection " + std::to_string(reinterpret_cast<std::uintptr_t>(errors)) +
                        ":" + std::to_string(token) + "] " + kind + " in " + op_name + ": " + text;
  return ffi::Error::Internal(message);
}

// Builds the Slot of every buffer; the batch shape comes from the first buffer.
ffi::Error layout(ffi::AnyBuffer const& buffer, std::int64_t core_ndim, Slot& slot,
                  std::vector<std::int64_t>& batch, bool first) {
  auto dims = buffer.dimensions();
  slot.typenum = numpy_type(buffer.element_type());
  if (slot.typenum < 0) return ffi::Error::InvalidArgument("libsection: unsupported element type");
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

// The Python value the op's C code reads for one input element: a read-only array over XLA's
// buffer, a copy of it for an input the op destroys, or a NumPy scalar for a scalar type.
PyObject* wrap_input(Slot const& s, char* data, bool tensor, bool destroyed) {
  if (!tensor) {
    PyArray_Descr* descr = PyArray_DescrFromType(s.typenum);
    if (!descr) return nullptr;
    PyObject* scalar = PyArray_Scalar(data, descr, nullptr);
    Py_DECREF(descr);
    return scalar;
  }
  int flags = NPY_ARRAY_C_CONTIGUOUS;
  if (reinterpret_cast<std::uintptr_t>(data) % static_cast<std::uintptr_t>(s.itemsize) == 0)
    flags |= NPY_ARRAY_ALIGNED;
  PyObject* view = PyArray_New(&PyArray_Type, static_cast<int>(s.core.size()),
                               const_cast<npy_intp*>(s.core.data()), s.typenum, nullptr, data, 0,
                               flags, nullptr);
  if (!view || !destroyed) return view;
  PyObject* copy = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(view), NPY_CORDER);
  Py_DECREF(view);
  return copy;
}

// A writable array over one element of a result buffer.
PyObject* writable_view(Slot const& s, char* data) {
  return PyArray_New(&PyArray_Type, static_cast<int>(s.core.size()),
                     const_cast<npy_intp*>(s.core.data()), s.typenum, nullptr, data, 0,
                     NPY_ARRAY_CARRAY, nullptr);
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
    array_ = writable ? writable_view(s, data) : wrap_input(s, data, true, false);
    return array_;
  }

 private:
  PyObject* array_ = nullptr;
};

// Checks one output of the op against its result buffer and copies it there: 0, or -1 with a
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
    bool const same = descr && descr->type_num == s.typenum;
    Py_XDECREF(descr);
    if (!same)
      return fail(PyExc_TypeError, where + " is not a " + dtype_name(s.typenum) + " scalar");
    PyArray_ScalarAsCtype(out, data);
    return 0;
  }
  if (!PyArray_Check(out))
    return fail(PyExc_TypeError, where + " is " + Py_TYPE(out)->tp_name + ", not an array");
  auto* a = reinterpret_cast<PyArrayObject*>(out);
  if (!PyArray_EquivTypenums(PyArray_TYPE(a), s.typenum))
    return fail(PyExc_TypeError, where + " has dtype " + dtype_name(PyArray_TYPE(a)) +
                                     ", the node declares " + dtype_name(s.typenum));
  int const nd = PyArray_NDIM(a);
  bool const same_shape = nd == static_cast<int>(s.core.size()) &&
                          std::equal(s.core.begin(), s.core.end(), PyArray_DIMS(a));
  if (!same_shape)
    return fail(PyExc_ValueError, where + " has shape " + shape_text(PyArray_DIMS(a), nd) +
                                      ", but the op's infer_shape gives " +
                                      shape_text(s.core.data(), static_cast<int>(s.core.size())) +
                                      " (the shape JAX allocated for it)");
  if (PyArray_IS_C_CONTIGUOUS(a)) {
    std::memcpy(data, PyArray_DATA(a), s.element_bytes);
    return 0;
  }
  PyObject* target = PyArray_New(&PyArray_Type, nd, PyArray_DIMS(a), s.typenum, nullptr, data, 0,
                                 NPY_ARRAY_CARRAY, nullptr);
  int const copied = target ? PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(target), a) : -1;
  Py_XDECREF(target);
  return copied;
}

// An array over a whole buffer, its batch dimensions and its element's.
PyObject* whole_view(Slot const& s, std::vector<std::int64_t> const& batch, bool writable) {
  std::vector<npy_intp> dims(batch.begin(), batch.end());
  dims.insert(dims.end(), s.core.begin(), s.core.end());
  int flags = writable ? NPY_ARRAY_CARRAY : NPY_ARRAY_C_CONTIGUOUS;
  if (reinterpret_cast<std::uintptr_t>(s.data) % static_cast<std::uintptr_t>(s.itemsize) == 0)
    flags |= NPY_ARRAY_ALIGNED;
  return PyArray_New(&PyArray_Type, static_cast<int>(dims.size()), dims.data(), s.typenum, nullptr,
                     s.data, 0, flags, nullptr);
}

// The whole batch in one call of the node's `Batched` (its C loop over the rows), which writes
// the results into the arrays over XLA's result buffers it is given.
ffi::Error run_batch(std::vector<Slot> const& in, std::vector<Slot> const& out,
                     std::vector<std::int64_t> const& batch, Entry entry, PyObject* batched,
                     PyObject* errors, std::string const& op_name) {
  Gil gil;
  std::vector<PyObject*> inputs(in.size()), given(out.size());
  DropRefs held_inputs{inputs}, held_given{given};
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!(inputs[i] = whole_view(in[i], batch, false))) return python_error(errors, op_name);
  for (std::size_t j = 0; j < out.size(); ++j)
    if (!(given[j] = whole_view(out[j], batch, true))) return python_error(errors, op_name);
  std::vector<PyObject*> results(given);
  if (entry(batched, inputs.data(), results.data()) != 0) return python_error(errors, op_name);
  DropRefs held_results{results};  // the arrays given, written
  return ffi::Error::Success();
}

// XLA calls the handler from C: no C++ exception (a failed allocation) may leave it.
ffi::Error run_node(ffi::RemainingArgs args, ffi::RemainingRets rets, std::uint64_t entry_address,
                    std::uint64_t op_address, std::uint64_t errors_address, std::string_view name,
                    ffi::Span<std::int64_t const> in_ndims, ffi::Span<std::int64_t const> in_kinds,
                    ffi::Span<std::int64_t const> out_ndims,
                    ffi::Span<std::int64_t const> out_kinds, std::uint64_t batch_entry,
                    std::uint64_t batch_op) try {
  std::size_t const n_in = args.size(), n_out = rets.size();
  if (in_ndims.size() != n_in || in_kinds.size() != n_in || out_ndims.size() != n_out ||
      out_kinds.size() != n_out)
    return ffi::Error::InvalidArgument("libsection: the call's attributes do not fit its buffers");
  auto entry = reinterpret_cast<Entry>(entry_address);
  auto* op = reinterpret_cast<PyObject*>(op_address);
  auto* errors = reinterpret_cast<PyObject*>(errors_address);

  std::vector<Slot> in(n_in), out(n_out);
  std::vector<std::int64_t> batch;
  for (std::size_t i = 0; i < n_in; ++i) {
    auto buffer = args.get<ffi::AnyBuffer>(i);
    if (buffer.has_error()) return buffer.error();
    if (auto e = layout(*buffer, in_ndims[i], in[i], batch, i == 0); e.failure()) return e;
  }
  for (std::size_t j = 0; j < n_out; ++j) {
    auto buffer = rets.get<ffi::AnyBuffer>(j);
    if (buffer.has_error()) return buffer.error();
    if (auto e = layout(**buffer, out_ndims[j], out[j], batch, n_in == 0 && j == 0); e.failure())
      return e;
  }
  std::size_t n_batch = 1;
  for (std::int64_t b : batch) n_batch *= static_cast<std::size_t>(b);

  std::string const op_name(name);
  if (batch_op && !batch.empty())
    return run_batch(in, out, batch, reinterpret_cast<Entry>(batch_entry),
                     reinterpret_cast<PyObject*>(batch_op), errors, op_name);
  Gil gil;
  std::vector<PyObject*> inputs(n_in), outputs(n_out), views(n_out), copies(n_in);
  // One array per buffer, moved along the batch: a new one only when the op kept a reference
  // to the last (it is then the op's, and must not change under it).
  std::vector<Reused> in_views(n_in), out_views(n_out);
  for (std::size_t b = 0; b < n_batch; ++b) {
    DropRefs held{copies};  // the inputs made for this element (scalars, copies)
    for (std::size_t i = 0; i < n_in; ++i) {
      char* data = in[i].data + b * in[i].element_bytes;
      // in_kinds: 0 scalar, 1 tensor, 2 tensor the op destroys (gets a copy)
      if (in_kinds[i] == 1) {
        inputs[i] = in_views[i].at(in[i], data, false);
      } else {
        inputs[i] = wrap_input(in[i], data, in_kinds[i] != 0, true);
        copies[i] = inputs[i];
      }
      if (!inputs[i]) return python_error(errors, op_name);
    }
    // Arrays over the result buffers: an op that writes into the outputs it is given (as it
    // reuses its own) writes straight into XLA's memory.
    for (std::size_t j = 0; j < n_out; ++j) {
      char* data = out[j].data + b * out[j].element_bytes;
      views[j] = outputs[j] = out_kinds[j] ? out_views[j].at(out[j], data, true) : nullptr;
      if (out_kinds[j] && !outputs[j]) return python_error(errors, op_name);
    }
    if (entry(op, inputs.data(), outputs.data()) != 0) return python_error(errors, op_name);
    DropRefs results{outputs};
    for (std::size_t j = 0; j < n_out; ++j) {
      if (outputs[j] == views[j]) continue;  // written in place
      if (store_output(outputs[j], out[j], out[j].data + b * out[j].element_bytes,
                       out_kinds[j] != 0, op_name, j) != 0)
        return python_error(errors, op_name);
    }
  }
  return ffi::Error::Success();
} catch (...) {
  return ffi::Error::Internal("libsection: a C++ exception in the handler (out of memory?)");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER(libsection_node_handler, run_node,
                       ffi::Ffi::Bind()
                           .RemainingArgs()
                           .RemainingRets()
                           .Attr<std::uint64_t>("entry")
                           .Attr<std::uint64_t>("op")
                           .Attr<std::uint64_t>("errors")
                           .Attr<std::string_view>("name")
                           .Attr<ffi::Span<std::int64_t const>>("in_ndims")
                           .Attr<ffi::Span<std::int64_t const>>("in_kinds")
                           .Attr<ffi::Span<std::int64_t const>>("out_ndims")
                           .Attr<ffi::Span<std::int64_t const>>("out_kinds")
                           .Attr<std::uint64_t>("batch_entry")
                           .Attr<std::uint64_t>("batch_op"));

LIBSECTION_EXPORT XLA_FFI_Error* libsection_jax_call(XLA_FFI_CallFrame* frame) {
  return libsection_node_handler(frame);
}

// What the loader asks of every libsection module. The handler library has no instances.
LIBSECTION_EXPORT int libsection_abi_version(void) { return LIBSECTION_MODULE_ABI; }
LIBSECTION_EXPORT PyObject* libsection_module_init(const void*) {
  if (_import_array() < 0) return NULL;
  return Py_None;
}
LIBSECTION_EXPORT PyObject* libsection_init(void) { return Py_None; }
LIBSECTION_EXPORT void* libsection_instance_new(PyObject**) {
  PyErr_SetString(PyExc_TypeError, "the JAX handler library has no instances");
  return NULL;
}
LIBSECTION_EXPORT int libsection_instance_run(void*) { return -1; }
LIBSECTION_EXPORT void libsection_instance_free(void*) {}
