// Python bindings of the parser: LoadedSections, load_sections, load_texts, parse_text and
// marker_style.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "diagnostic_record.hpp"
#include "loaded.hpp"
#include "parse/declarations.hpp"
#include "section/parse.hpp"

namespace py = pybind11;

namespace section::python {

namespace {

char const* style_name(MarkerStyle s) {
  switch (s) {
    case MarkerStyle::none: return "none";
    case MarkerStyle::section: return "section";
    case MarkerStyle::legacy: return "legacy";
    case MarkerStyle::mixed: return "mixed";
  }
  return "none";
}

py::dict sections_dict(LoadedSections const& l) {
  py::dict out;
  for (auto const& s : l.set.sections) out[py::str(s.tag)] = py::str(s.text);
  return out;
}

std::vector<std::string> file_texts(LoadedSections const& l) {
  std::vector<std::string> codes;
  for (auto id : l.set.files) codes.push_back(l.sources->file(id).text());
  return codes;
}

std::vector<std::string> file_paths(LoadedSections const& l) {
  std::vector<std::string> names;
  for (auto id : l.set.files) names.push_back(l.sources->file(id).path());
  return names;
}

py::dict block_dict(Block const& b, SourceManager const& sm) {
  auto const& text = sm.file(b.body.file).text();
  py::dict d;
  d["tag"] = b.tag;
  d["filename"] = sm.file(b.marker.file).path();
  d["line"] = b.marker_line;
  d["column"] = sm.line_column(b.marker.file, b.marker.begin).column;
  d["body_line"] = b.marker_line + 1;
  d["text"] = py::str(text.substr(b.body.begin, b.body.end - b.body.begin));
  return d;
}

py::list block_dicts(LoadedSections const& l) {
  py::list out;
  for (auto const& s : l.set.sections)
    for (auto const& b : s.blocks) out.append(block_dict(b, *l.sources));
  return out;
}

std::vector<DiagnosticRecord> diagnostic_records(LoadedSections const& l) {
  return make_records(l.set.diagnostics, *l.sources);
}

py::object error_tuple(LoadedSections const& l) {
  if (!l.set.error) return py::none();
  // The path as os.fsdecode gives it: a file name need not be UTF-8.
  auto const& path = l.set.error->path;
  py::object const name = py::reinterpret_steal<py::object>(
      PyUnicode_DecodeFSDefaultAndSize(path.data(), static_cast<Py_ssize_t>(path.size())));
  if (!name) throw py::error_already_set();
  // A named tuple (libsection.LoadError): fields by name, and unpacking as before.
  return py::module_::import("libsection._load")
      .attr("LoadError")(l.set.error->os_errno, l.set.error->message, name);
}

std::string loaded_repr(LoadedSections const& l) {
  py::list files, tags;
  for (auto id : l.set.files) files.append(py::str(l.sources->file(id).path()));
  for (auto const& sec : l.set.sections) tags.append(py::str(sec.tag));
  std::size_t findings = 0;
  for (auto const& d : l.set.diagnostics) findings += d.severity != Severity::info;
  std::string out = "<LoadedSections files=" + py::repr(files).cast<std::string>() +
                    " sections=" + py::repr(tags).cast<std::string>();
  if (l.set.error) out += " error=" + py::repr(py::str(l.set.error->message)).cast<std::string>();
  out += " diagnostics=" + std::to_string(l.set.diagnostics.size());
  if (findings) out += " (" + std::to_string(findings) + " not info)";
  return out + ">";
}

void bind_loaded_sections(py::module_& m) {
  py::class_<LoadedSections>(m, "LoadedSections", R"doc(
Sections merged from one or more files with the reference ``load_c_code`` semantics, as
``libsection.load`` and ``libsection.parse_text`` return them; ``libsection.build`` takes them
in place of files.

Examples:
    >>> import libsection
    >>> text = '''#section support_code
    ... static double twice(double x) { return 2 * x; }
    ... #section code
    ... OUTPUT_0 = twice(INPUT_0);
    ... '''
    >>> loaded = libsection.parse_text(text, "twice.c")
    >>> list(loaded.sections), loaded.files, loaded.error
    (['support_code', 'code'], ['twice.c'], None)
    >>> op = libsection.build(loaded, inputs=["float64"], outputs=["float64"])
    >>> print(op(1.5))
    3.0)doc")
      .def_property_readonly("sections", &sections_dict,
                             "dict tag -> text, in order of first appearance")
      .def_property_readonly("codes", &file_texts,
                             "the files' texts, newlines normalised (the reference's func_codes)")
      .def_property_readonly("files", &file_paths, "the files' names, as the caller gave them")
      .def_property_readonly("blocks", &block_dicts,
                             "every block that makes up the sections, with its file and lines")
      .def_property_readonly("diagnostics", &diagnostic_records,
                             "every finding of the parse: errors, warnings and notes")
      .def_property_readonly("error", &error_tuple,
                             "None, or a LoadError(errno, message, path) for the error the "
                             "reference raises (a named tuple)")
      .def("__repr__", &loaded_repr);
}

LoadedSections load_files(std::vector<std::string> const& paths,
                          std::optional<std::vector<std::string>> const& names,
                          std::vector<std::string> const& extra_tags) {
  if (names && names->size() != paths.size())
    throw py::value_error("display_paths must have one name per path");
  std::vector<SourceSpec> specs;
  for (std::size_t i = 0; i < paths.size(); ++i)
    specs.push_back({paths[i], names ? (*names)[i] : paths[i]});
  LoadedSections out{std::make_shared<SourceManager>(), {}};
  {
    py::gil_scoped_release release;
    out.set = load_sections(*out.sources, specs, extra_tags);
  }
  return out;
}

/// Texts held in memory merged as if read from the files `names`.
LoadedSections merge_texts(std::vector<std::string> texts, std::vector<std::string> const& names,
                           std::vector<std::string> const& extra_tags) {
  LoadedSections out{std::make_shared<SourceManager>(), {}};
  std::vector<Diagnostic> diagnostics;
  std::vector<FileId> ids;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (auto id = add_source(*out.sources, std::move(texts[i]), names[i], diagnostics))
      ids.push_back(*id);
  }
  out.set = merge_sections(*out.sources, ids, std::move(diagnostics), extra_tags);
  return out;
}

LoadedSections load_texts(std::vector<std::string> texts, std::vector<std::string> const& names,
                          std::vector<std::string> const& extra_tags) {
  if (names.size() != texts.size())
    throw py::value_error("load_texts: one name per text is needed");
  return merge_texts(std::move(texts), names, extra_tags);
}

LoadedSections parse_text(std::string text, std::string const& filename,
                          std::vector<std::string> const& extra_tags) {
  std::vector<std::string> texts;
  texts.push_back(std::move(text));
  return merge_texts(std::move(texts), {filename}, extra_tags);
}

std::string marker_style(std::string text) {
  SourceManager sm;
  std::vector<Diagnostic> ds;
  auto const id = sm.add("<string>", std::move(text));
  return style_name(parse_file(sm, id, ds).style);
}

/// What the op's main function takes, per parameter as written: "array" (a pointer or an
/// array), "number" (plainly a number type) or "other" (a typedef may hide either); None when
/// no section declares it.
std::optional<std::vector<std::string>> main_function_takes(LoadedSections const& l,
                                                            std::string const& func_name) {
  auto const parameters = c_scan::main_function_parameters(*l.sources, l.set, func_name);
  if (!parameters) return std::nullopt;
  std::vector<std::string> out;
  for (auto const& p : *parameters)
    out.push_back(p.pointer ? "array" : p.number ? "number" : "other");
  return out;
}

}  // namespace

void bind_parse(py::module_& m) {
  bind_loaded_sections(m);
  m.def("load_sections", &load_files, py::arg("paths"), py::arg("display_paths") = py::none(),
        py::arg("extra_tags") = std::vector<std::string>{},
        "Reads and merges section files (`extra_tags`: tags accepted besides the nine). Never "
        "raises for file content: see `.error`.");
  m.def("load_texts", &load_texts, py::arg("texts"), py::arg("names"),
        py::arg("extra_tags") = std::vector<std::string>{},
        "Merges section-file texts held in memory (e.g. an unpickled op's func_codes) as "
        "load_sections merges files.");
  m.def("parse_text", &parse_text, py::arg("text"), py::arg("filename") = "<string>",
        py::arg("extra_tags") = std::vector<std::string>{},
        "Parses section-file text held in memory, as if read from `filename`.");
  m.def("marker_style", &marker_style, py::arg("text"),
        "Which marker syntax a text uses: none, section, legacy or mixed.");
  m.def("main_function_takes", &main_function_takes, py::arg("loaded"), py::arg("func_name"),
        "What the op's main function `func_name` takes, per parameter as its sections write it: "
        "'array', 'number' or 'other'; None when no section declares it.");
}

}  // namespace section::python
