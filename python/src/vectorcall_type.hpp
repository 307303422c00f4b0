// The part every static CPython type of libsection._core shares: instances are called through
// vectorcall, and the type is readied and added to the module once.
#pragma once

#include <pybind11/pybind11.h>

namespace section::python {

/// Finishes `type` (its other slots already set) as a vectorcall type whose function pointer
/// sits at `vectorcall_offset` in each instance, readies it and adds it to `m` as `name`.
inline void add_vectorcall_type(pybind11::module_& m, PyTypeObject& type, char const* name,
                                Py_ssize_t vectorcall_offset) {
  type.tp_flags |= Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  type.tp_vectorcall_offset = vectorcall_offset;
  type.tp_call = PyVectorcall_Call;
  if (PyType_Ready(&type) < 0) throw pybind11::error_already_set();
  Py_INCREF(&type);
  m.add_object(name, reinterpret_cast<PyObject*>(&type));
}

}  // namespace section::python
