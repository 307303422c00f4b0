// Python bindings of the parser: parse_text and load_sections.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "diagnostic_record.hpp"
#include "loaded.hpp"
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

py::dict sections_dict(SectionSet const& set) {
  py::dict out;
  for (auto const& s : set.sections) out[py::str(s.tag)] = py::str(s.text);
  return out;
}

py::object error_tuple(SectionSet const& set) {
  if (!set.error) return py::none();
  // The path as os.fsdecode gives it: a file name need not be UTF-8.
  auto const& path = set.error->path;
  py::object const name = py::reinterpret_steal<py::object>(
      PyUnicode_DecodeFSDefaultAndSize(path.data(), static_cast<Py_ssize_t>(path.size())));
  if (!name) throw py::error_already_set();
  // A named tuple (libsection.LoadError): fields by name, and unpacking as before.
  return py::module_::import("libsection._load")
      .attr("LoadError")(set.error->os_errno, set.error->message, name);
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

}  // namespace

void bind_parse(py::module_& m) {
  py::class_<LoadedSections>(m, "LoadedSections", R"doc(
Sections merged from one or more files with the reference ``load_c_code`` semantics.)doc")
      .def_property_readonly(
          "sections", [](LoadedSections const& l) { return sections_dict(l.set); },
          "dict tag -> text, in order of first appearance")
      .def_property_readonly(
          "codes",
          [](LoadedSections const& l) {
            std::vector<std::string> codes;
            for (auto id : l.set.files) codes.push_back(l.sources->file(id).text());
            return codes;
          },
          "the files' texts, newlines normalised (the reference's func_codes)")
      .def_property_readonly("files",
                             [](LoadedSections const& l) {
                               std::vector<std::string> names;
                               for (auto id : l.set.files)
                                 names.push_back(l.sources->file(id).path());
                               return names;
                             })
      .def_property_readonly(
          "blocks",
          [](LoadedSections const& l) {
            py::list out;
            for (auto const& s : l.set.sections)
              for (auto const& b : s.blocks) out.append(block_dict(b, *l.sources));
            return out;
          },
          "every block that makes up the sections, with its file and lines")
      .def_property_readonly(
          "diagnostics",
          [](LoadedSections const& l) { return make_records(l.set.diagnostics, *l.sources); })
      .def_property_readonly(
          "error", [](LoadedSections const& l) { return error_tuple(l.set); },
          "None, or a LoadError(errno, message, path) for the error the "
          "reference raises (a named tuple)")
      .def("__repr__", [](LoadedSections const& l) {
        py::list files, tags;
        for (auto id : l.set.files) files.append(py::str(l.sources->file(id).path()));
        for (auto const& sec : l.set.sections) tags.append(py::str(sec.tag));
        std::size_t findings = 0;
        for (auto const& d : l.set.diagnostics) findings += d.severity != Severity::info;
        std::string out = "<LoadedSections files=" + py::repr(files).cast<std::string>() +
                          " sections=" + py::repr(tags).cast<std::string>();
        if (l.set.error)
          out += " error=" + py::repr(py::str(l.set.error->message)).cast<std::string>();
        out += " diagnostics=" + std::to_string(l.set.diagnostics.size());
        if (findings) out += " (" + std::to_string(findings) + " not info)";
        return out + ">";
      });

  m.def(
      "load_sections",
      [](std::vector<std::string> const& paths, std::optional<std::vector<std::string>> names,
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
      },
      py::arg("paths"), py::arg("display_paths") = py::none(),
      py::arg("extra_tags") = std::vector<std::string>{},
      "Reads and merges section files (`extra_tags`: tags accepted besides the nine). Never "
      "raises for file content: see `.error`.");

  m.def(
      "parse_text",
      [](std::string text, std::string const& filename,
         std::vector<std::string> const& extra_tags) {
        LoadedSections out{std::make_shared<SourceManager>(), {}};
        std::vector<Diagnostic> diagnostics;
        std::vector<FileId> ids;
        if (auto id = add_source(*out.sources, std::move(text), filename, diagnostics))
          ids.push_back(*id);
        out.set = merge_sections(*out.sources, ids, std::move(diagnostics), extra_tags);
        return out;
      },
      py::arg("text"), py::arg("filename") = "<string>",
      py::arg("extra_tags") = std::vector<std::string>{},
      "Parses section-file text held in memory, as if read from `filename`.");

  m.def(
      "marker_style",
      [](std::string text) {
        SourceManager sm;
        std::vector<Diagnostic> ds;
        auto const id = sm.add("<string>", std::move(text));
        return std::string(style_name(parse_file(sm, id, ds).style));
      },
      py::arg("text"), "Which marker syntax a text uses: none, section, legacy or mixed.");
}

}  // namespace section::python
