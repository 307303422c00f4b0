// The linker core's errors in Python.
#include "link_errors.hpp"

#include <pybind11/stl.h>

#include "diagnostic_record.hpp"

namespace py = pybind11;

namespace section::python {
namespace {

py::handle link_error_type, compile_error_type;

}  // namespace

void add_link_errors(py::module_& m) {
  link_error_type = PyErr_NewException("libsection._core.LinkError", PyExc_ValueError, nullptr);
  compile_error_type =
      PyErr_NewException("libsection._core.CompileError", PyExc_RuntimeError, nullptr);
  if (!link_error_type || !compile_error_type) throw py::error_already_set();
  m.add_object("LinkError", link_error_type);
  m.add_object("CompileError", compile_error_type);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (LinkError const& e) {
      PyErr_SetString(link_error_type.ptr(), e.what());
    } catch (CacheError const& e) {
      PyErr_SetString(link_error_type.ptr(), e.what());
    }
  });
}

void raise_python(LinkError const& e, SourceManager const& sm) {
  if (dynamic_cast<InputTypeError const*>(&e)) throw py::type_error(e.what());
  auto const* compile = dynamic_cast<CompileError const*>(&e);
  py::handle type = compile ? compile_error_type : link_error_type;
  py::object error = type(e.what());
  error.attr("diagnostics") = py::cast(make_records(e.diagnostics(), sm));
  if (compile) error.attr("kept_dir") = compile->kept_dir().string();
  PyErr_SetObject(type.ptr(), error.ptr());
  throw py::error_already_set();
}

}  // namespace section::python
