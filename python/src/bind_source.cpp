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
location (1-based line and column; columns count bytes of the UTF-8 text).

Examples:
    >>> import libsection
    >>> text = '''#section suport_code
    ... int x;
    ... '''
    >>> d = libsection.parse_text(text, "op.c").diagnostics[0]
    >>> d.code, d.severity, d.line, d.column, d.replacement
    ('SL201', 'error', 1, 10, 'support_code')
    >>> print(d.render())
    op.c:1:10: error: Unknown section type (in file op.c): suport_code [SL201]
    ...)doc")
      .def_readonly("code", &DiagnosticRecord::code, "The rule's stable code (``SL201``).")
      .def_readonly("severity", &DiagnosticRecord::severity,
                    "``\"error\"``, ``\"warning\"`` or ``\"info\"``.")
      .def_readonly("message", &DiagnosticRecord::message, "What is wrong, in one line.")
      .def_readonly("filename", &DiagnosticRecord::filename,
                    "The file, as the caller named it; None without a location.")
      .def_readonly("line", &DiagnosticRecord::line, "1-based line of the start.")
      .def_readonly("column", &DiagnosticRecord::column,
                    "1-based column of the start, in bytes of the UTF-8 text.")
      .def_readonly("end_line", &DiagnosticRecord::end_line, "1-based line of the end.")
      .def_readonly("end_column", &DiagnosticRecord::end_column,
                    "1-based column of the end, in bytes.")
      .def_readonly("notes", &DiagnosticRecord::notes, "Further explanations, one per note.")
      .def_readonly("fix", &DiagnosticRecord::fix,
                    "What the suggested fix does, in words; None without one.")
      .def_readonly("replacement", &DiagnosticRecord::replacement,
                    "The text that replaces the range to fix it; None without a fix.")
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
