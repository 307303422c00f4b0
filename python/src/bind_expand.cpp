// Python bindings of the expander: signatures, expand, op cache version, signature strings.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "diagnostic_record.hpp"
#include "loaded.hpp"
#include "section/expand.hpp"
#include "section/signature.hpp"

namespace py = pybind11;

namespace section::python {

namespace {

py::dict expansion_dict(Expansion const& e, SourceManager const& sm) {
  py::dict out;
  out["c_init_code"] = e.init_code;
  out["c_support_code"] = e.support_code;
  out["c_init_code_apply"] = e.init_code_apply;
  out["c_support_code_apply"] = e.support_code_apply;
  out["c_support_code_struct"] = e.support_code_struct;
  out["c_cleanup_code_struct"] = e.cleanup_code_struct;
  out["c_init_code_struct"] = e.init_code_struct;
  out["c_code"] = e.code ? py::object(py::str(*e.code)) : py::object(py::none());
  out["c_code_cleanup"] = e.code_cleanup;
  out["macros"] = py::make_tuple(e.macro_defines, e.macro_undefs);
  out["diagnostics"] = make_records(e.diagnostics, sm);
  return out;
}

void bind_signature_strings(py::module_& m) {
  py::class_<TypeSpec> type_spec(m, "TypeSpec", R"doc(
A variable type in signature syntax: tensor ``float64[:]``, scalar ``int64`` or ``object``.)doc");
  py::enum_<TypeSpec::Kind>(type_spec, "Kind")
      .value("tensor", TypeSpec::Kind::tensor)
      .value("scalar", TypeSpec::Kind::scalar)
      .value("generic", TypeSpec::Kind::generic);
  type_spec.def_readonly("kind", &TypeSpec::kind)
      .def_readonly("dtype", &TypeSpec::dtype)
      .def_readonly("ndim", &TypeSpec::ndim)
      .def_property_readonly("dtype_name", &TypeSpec::dtype_name)
      .def("pytensor_str", &TypeSpec::pytensor_str)
      .def("c_element_type", &TypeSpec::c_element_type)
      .def("__str__", &TypeSpec::to_string)
      .def("__repr__", [](TypeSpec const& t) { return "<TypeSpec " + t.to_string() + ">"; });

  m.def("parse_type", &parse_type, py::arg("text"),
        "Parses one type (``float64[:]``); raises ValueError naming the bad character.");
  m.def("parse_types", &parse_type_list, py::arg("text"), py::arg("role") = "input",
        "Parses ``float64[:],int64``; raises ValueError naming the item and character.");
  m.def("parse_params",
        [](std::string_view text) {
          std::vector<std::pair<std::string, TypeSpec>> out;
          for (auto& field : parse_params(text)) out.emplace_back(field.name, field.type);
          return out;
        },
        py::arg("text"), "Parses params fields ``k:int64,a:float64[:]`` into (name, TypeSpec).");
}

}  // namespace

void bind_expand(py::module_& m) {
  bind_signature_strings(m);  // first: the functions below take and return TypeSpec

  py::class_<ParamField>(m, "ParamField")
      .def(py::init([](std::string name, std::string c_element_type) {
             return ParamField{std::move(name), std::move(c_element_type)};
           }),
           py::arg("name"), py::arg("c_element_type"))
      .def_readwrite("name", &ParamField::name)
      .def_readwrite("c_element_type", &ParamField::c_element_type);

  py::class_<ParamsSpec>(m, "ParamsSpec", "An op's ParamsType: struct name and fields.")
      .def(py::init([](std::string type_name, std::vector<ParamField> fields) {
             return ParamsSpec{std::move(type_name), std::move(fields)};
           }),
           py::arg("type_name"), py::arg("fields"))
      .def_readwrite("type_name", &ParamsSpec::type_name)
      .def_readwrite("fields", &ParamsSpec::fields);

  py::class_<ApplySignature>(m, "ApplySignature", R"doc(
Everything the expansion of one apply depends on besides the sections (names as in the
C++ ``section::ApplySignature``). List fields are copied on assignment: assign whole lists.)doc")
      .def(py::init<>())
      .def_readwrite("node_name", &ApplySignature::node_name)
      .def_readwrite("input_dtypes", &ApplySignature::input_dtypes)
      .def_readwrite("output_dtypes", &ApplySignature::output_dtypes)
      .def_readwrite("input_names", &ApplySignature::input_names)
      .def_readwrite("output_names", &ApplySignature::output_names)
      .def_readwrite("params", &ApplySignature::params)
      .def_readwrite("params_name", &ApplySignature::params_name)
      .def_readwrite("check_input", &ApplySignature::check_input)
      .def_readwrite("func_name", &ApplySignature::func_name)
      .def_readwrite("num_inputs", &ApplySignature::num_inputs)
      .def_readwrite("num_outputs", &ApplySignature::num_outputs)
      .def_readwrite("function_args", &ApplySignature::function_args)
      .def_readwrite("fail", &ApplySignature::fail)
      .def_readwrite("init_fail", &ApplySignature::init_fail);

  py::class_<ExpandOptions>(m, "ExpandOptions")
      .def(py::init<>())
      .def_readwrite("line_directives", &ExpandOptions::line_directives)
      .def_readwrite("newline_fix", &ExpandOptions::newline_fix)
      .def_readwrite("resume_file", &ExpandOptions::resume_file)
      .def_readwrite("line_paths", &ExpandOptions::line_paths);

  m.def("load_texts",
        [](std::vector<std::string> texts, std::vector<std::string> const& names,
           std::vector<std::string> const& extra_tags) {
          if (names.size() != texts.size())
            throw py::value_error("load_texts: one name per text is needed");
          LoadedSections out{std::make_shared<SourceManager>(), {}};
          std::vector<Diagnostic> diagnostics;
          std::vector<FileId> ids;
          for (std::size_t i = 0; i < texts.size(); ++i) {
            if (auto id = add_source(*out.sources, std::move(texts[i]), names[i], diagnostics))
              ids.push_back(*id);
          }
          out.set = merge_sections(*out.sources, ids, std::move(diagnostics), extra_tags);
          return out;
        },
        py::arg("texts"), py::arg("names"), py::arg("extra_tags") = std::vector<std::string>{},
        "Merges section-file texts held in memory (e.g. an unpickled op's func_codes) as "
        "load_sections merges files.");

  m.def("expand",
        [](LoadedSections const& loaded, ApplySignature const& signature,
           ExpandOptions const& options) {
          Expansion e = expand(*loaded.sources, loaded.set, signature, options);
          return expansion_dict(e, *loaded.sources);
        },
        py::arg("sections"), py::arg("signature"), py::arg_v("options", ExpandOptions{}, "ExpandOptions()"),
        R"doc(Every c_* method's string for one apply, as a dict keyed by method name
(``c_code`` is None where the reference raises), plus ``diagnostics``.)doc");

  m.def("op_cache_version",
        [](LoadedSections const& loaded, ApplySignature const& signature,
           ExpandOptions const& options) {
          return op_cache_version(*loaded.sources, loaded.set, signature, options);
        },
        py::arg("sections"), py::arg("signature"), py::arg_v("options", ExpandOptions{}, "ExpandOptions()"),
        "The op's cache version: a hash of files, func_name, padding, check_input, params.");

  m.def("single_node_signature", &single_node_signature, py::arg("inputs"), py::arg("outputs"),
        py::arg("params") = std::nullopt,
        "The signature PyTensor's CLinker gives the only node of a single-node graph.");
  m.def("params_spec",
        [](std::vector<std::pair<std::string, TypeSpec>> const& fields) {
          std::vector<NamedType> named;
          for (auto const& [name, type] : fields) named.push_back({name, type});
          return params_spec(std::move(named));
        },
        py::arg("fields"), "The ParamsType PyTensor builds from (name, TypeSpec) fields.");
  m.def("relocate_line_directives", &relocate_line_directives, py::arg("module_text"),
        py::arg("module_path"), py::arg("resume_file") = std::string(default_resume_file));
}

}  // namespace section::python
