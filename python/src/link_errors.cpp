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
  m.def(
      "raise_expansion_errors",
      [](std::string const& op_name, std::vector<DiagnosticRecord> const& diagnostics,
         bool code_missing) {
        std::vector<ExpansionError> errors;
        for (auto const& d : diagnostics)
          if (d.severity == "error") errors.push_back({d.code, d.message});
        raise_expansion_errors(op_name, errors, code_missing);
      },
      py::arg("op_name"), py::arg("diagnostics"), py::arg("code_missing"),
      R"doc(Raises what the drop-in op ``op_name``'s ``c_*`` methods raise for an expansion with
``diagnostics``: ``ValueError`` for its errors, unless one is SL604; then, when ``c_code`` is
asked and the expansion has none (``code_missing``), ``AssertionError`` for SL604, else
``NotImplementedError``. Returns when there is nothing to raise.)doc");
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

void raise_expansion_errors(std::string const& op_name, std::vector<ExpansionError> const& errors,
                            bool code_missing) {
  std::string messages, padding;
  for (auto const& e : errors) {
    if (e.code == "SL604" && padding.empty()) padding = e.message;
    messages += (messages.empty() ? "" : "\n") + e.message;
  }
  if (!messages.empty() && padding.empty()) throw py::value_error(messages);
  if (!code_missing) return;
  if (!padding.empty()) {
    PyErr_SetString(PyExc_AssertionError, padding.c_str());
    throw py::error_already_set();
  }
  PyErr_SetString(PyExc_NotImplementedError,
                  (op_name + " has no `code` section and no func_name").c_str());
  throw py::error_already_set();
}

}  // namespace section::python
