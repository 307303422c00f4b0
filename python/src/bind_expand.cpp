// Python bindings of the expander: signature strings, op descriptions, node contexts, the
// expansion's methods, expand and the op cache version.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "diagnostic_record.hpp"
#include "loaded.hpp"
#include "section/expand.hpp"
#include "section/op.hpp"
#include "section/signature.hpp"

namespace py = pybind11;

namespace section::python {

namespace {

py::dict expansion_dict(Expansion const& e, SourceManager const& sm) {
  py::dict out;
  for (ExpansionMethod const& method : expansion_methods())
    out[py::str(std::string(method.name))] = py::cast(method_result(e, method));
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
  m.def(
      "parse_params",
      [](std::string_view text) {
        std::vector<std::pair<std::string, TypeSpec>> out;
        for (auto& field : parse_params(text)) out.emplace_back(field.name, field.type);
        return out;
      },
      py::arg("text"), "Parses params fields ``k:int64,a:float64[:]`` into (name, TypeSpec).");
}

void bind_op_description(py::module_& m) {
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

  py::class_<OpDescription>(m, "OpDescription", R"doc(
What an op is, whatever node it is applied to (names as in the C++ ``section::OpDescription``).
List fields are copied on assignment: assign whole lists.)doc")
      .def(py::init<>())
      .def_readwrite("name", &OpDescription::name)
      .def_readwrite("func_name", &OpDescription::func_name)
      .def_readwrite("num_inputs", &OpDescription::num_inputs)
      .def_readwrite("num_outputs", &OpDescription::num_outputs)
      .def_readwrite("check_input", &OpDescription::check_input)
      .def_readwrite("has_params", &OpDescription::has_params)
      .def_readwrite("params", &OpDescription::params)
      .def_readwrite("inputs", &OpDescription::inputs)
      .def_readwrite("outputs", &OpDescription::outputs)
      .def_readwrite("release_gil", &OpDescription::release_gil,
                     "Whether the op's code may run without the GIL where the linker sees that is "
                     "safe (README, \"Threads\"); ``True`` by default.")
      .def_property(
          "language",
          [](OpDescription const& op) { return std::string(language_name(op.language)); },
          [](OpDescription& op, std::string const& text) {
            op.language = parse_language(text, op.name);
          },
          "``\"c++\"`` (the default) or ``\"c\"``: what the op's sections are written in; "
          "anything else is a ``ValueError`` naming the op (``name``).");
}

void bind_node_context(py::module_& m) {
  py::class_<NodeContext>(m, "NodeContext", R"doc(
One application of an op: C names, dtypes and ``sub`` dicts (names as in the C++
``section::NodeContext``). List and dict fields are copied on assignment: assign whole values.)doc")
      .def(py::init<>())
      .def_readwrite("node_name", &NodeContext::node_name)
      .def_readwrite("inputs", &NodeContext::inputs)
      .def_readwrite("outputs", &NodeContext::outputs)
      .def_readwrite("input_dtypes", &NodeContext::input_dtypes)
      .def_readwrite("output_dtypes", &NodeContext::output_dtypes)
      .def_readwrite("sub", &NodeContext::sub)
      .def_readwrite("init_sub", &NodeContext::init_sub)
      .def_readwrite("function_args", &NodeContext::function_args)
      .def_readwrite("macros", &NodeContext::macros)
      .def_readwrite("call_macros", &NodeContext::call_macros);
}

void bind_expansion_methods(py::module_& m) {
  py::class_<ExpansionMethod>(m, "ExpansionMethod",
                              "A c_* method: its name, its section and the macros around it.")
      .def_property_readonly("name", [](ExpansionMethod const& e) { return std::string(e.name); })
      .def_property_readonly("tag", [](ExpansionMethod const& e) { return std::string(e.tag); })
      .def_property_readonly("apply_macros",
                             [](ExpansionMethod const& e) { return e.macros.apply; })
      .def_property_readonly("sub_macros", [](ExpansionMethod const& e) { return e.macros.sub; })
      .def_property_readonly("io_macros", [](ExpansionMethod const& e) { return e.macros.io; });
  m.def(
      "expansion_methods",
      [] {
        auto const methods = expansion_methods();
        return std::vector<ExpansionMethod>(methods.begin(), methods.end());
      },
      "The c_* methods of an expansion, in the order the reference documents them.");
}

py::dict expand_one(LoadedSections const& loaded, OpDescription const& op, NodeContext const& node,
                    ExpandOptions const& options) {
  Expansion const e = expand(*loaded.sources, loaded.set, op, node, options);
  return expansion_dict(e, *loaded.sources);
}

std::string cache_version(LoadedSections const& loaded, OpDescription const& op,
                          ExpandOptions const& options) {
  return op_cache_version(*loaded.sources, loaded.set, op, options);
}

ParamsSpec params_spec_of(std::vector<std::pair<std::string, TypeSpec>> const& fields) {
  std::vector<NamedType> named;
  for (auto const& [name, type] : fields) named.push_back({name, type});
  return params_spec(std::move(named));
}

void bind_expansion(py::module_& m) {
  py::class_<ExpandOptions>(m, "ExpandOptions")
      .def(py::init<>())
      .def_readwrite("line_directives", &ExpandOptions::line_directives)
      .def_readwrite("newline_fix", &ExpandOptions::newline_fix)
      .def_readwrite("resume_file", &ExpandOptions::resume_file)
      .def_readwrite("line_paths", &ExpandOptions::line_paths);
  m.def("expand", &expand_one, py::arg("sections"), py::arg("op"), py::arg("node"),
        py::arg_v("options", ExpandOptions{}, "ExpandOptions()"),
        R"doc(Every c_* method's string for one apply, as a dict keyed by method name
(``c_code`` is None where the reference raises), plus ``diagnostics``.)doc");
  m.def("op_cache_version", &cache_version, py::arg("sections"), py::arg("op"),
        py::arg_v("options", ExpandOptions{}, "ExpandOptions()"),
        "The op's cache version: a hash of files, func_name, padding, check_input, params.");
  m.def("single_node_context", &single_node_context, py::arg("op"),
        "The context PyTensor's CLinker gives the only node of a single-node graph of the op.");
  m.def("params_spec", &params_spec_of, py::arg("fields"),
        "The ParamsType PyTensor builds from (name, TypeSpec) fields.");
  m.def("relocate_line_directives", &relocate_line_directives, py::arg("module_text"),
        py::arg("module_path"), py::arg("resume_file") = std::string(default_resume_file));
}

}  // namespace

void bind_expand(py::module_& m) {
  bind_signature_strings(m);  // first: the functions below take and return TypeSpec
  bind_op_description(m);
  bind_node_context(m);
  bind_expansion_methods(m);
  bind_expansion(m);
}

}  // namespace section::python
