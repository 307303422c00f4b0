// Python view of diagnostics: plain records with resolved file/line/column and rendered text.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "diagnostic_record.hpp"
#include "section/render.hpp"

namespace py = pybind11;

namespace section::python {

DiagnosticRecord make_record(Diagnostic const& d, SourceManager const& sm) {
  DiagnosticRecord r;
  r.code = d.code;
  r.severity = to_string(d.severity);
  r.message = d.message;
  if (d.range.valid()) {
    r.filename = sm.file(d.range.file).path();
    auto const b = sm.line_column(d.range.file, d.range.begin);
    auto const e = sm.line_column(d.range.file, d.range.end);
    r.line = b.line, r.column = b.column, r.end_line = e.line, r.end_column = e.column;
  }
  for (auto const& n : d.notes) r.notes.push_back(n.message);
  if (d.fix) r.fix = d.fix->message, r.replacement = d.fix->replacement;
  r.text = render_text(d, sm);
  return r;
}

std::vector<DiagnosticRecord> make_records(std::vector<Diagnostic> const& ds,
                                           SourceManager const& sm) {
  std::vector<DiagnosticRecord> out;
  out.reserve(ds.size());
  for (auto const& d : ds) out.push_back(make_record(d, sm));
  return out;
}

void bind_source(py::module_& m) {
  py::class_<DiagnosticRecord>(m, "Diagnostic", R"doc(
A problem found in a section file: a stable code (``SL201``), a severity, a message, and a
location (1-based line and column; columns count bytes of the UTF-8 text).)doc")
      .def_readonly("code", &DiagnosticRecord::code)
      .def_readonly("severity", &DiagnosticRecord::severity)
      .def_readonly("message", &DiagnosticRecord::message)
      .def_readonly("filename", &DiagnosticRecord::filename)
      .def_readonly("line", &DiagnosticRecord::line)
      .def_readonly("column", &DiagnosticRecord::column)
      .def_readonly("end_line", &DiagnosticRecord::end_line)
      .def_readonly("end_column", &DiagnosticRecord::end_column)
      .def_readonly("notes", &DiagnosticRecord::notes)
      .def_readonly("fix", &DiagnosticRecord::fix)
      .def_readonly("replacement", &DiagnosticRecord::replacement)
      .def(
          "render", [](DiagnosticRecord const& r) { return r.text; },
          "The diagnostic in clang style: location, message, source line, caret, notes.")
      .def("__str__", [](DiagnosticRecord const& r) { return r.text; })
      .def("__repr__", [](DiagnosticRecord const& r) {
        auto where =
            r.filename ? *r.filename + ":" + std::to_string(r.line) + ":" + std::to_string(r.column)
                       : std::string("<no location>");
        return "<Diagnostic " + r.code + " " + r.severity + " at " + where + ": " + r.message + ">";
      });
}

}  // namespace section::python
