// section-expand: prints what each `c_*` method of an ExternalCOp becomes for one signature.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "section/expand.hpp"
#include "section/names.hpp"
#include "section/op.hpp"
#include "section/parse.hpp"
#include "section/render.hpp"
#include "section/signature.hpp"
#include "section/version.hpp"

namespace {

constexpr int exit_usage = 2;

struct Options {
  std::vector<std::string> files;
  std::string inputs;
  std::string outputs;
  std::string params;
  std::optional<std::string> func_name;
  std::optional<std::string> node_name;
  std::optional<int> num_inputs;
  std::optional<int> num_outputs;
  bool check_input = true;
  bool no_line_directives = false;
  bool no_newline_fix = false;
  std::string format = "text";
};

/// A method's result as JSON: a string, a list (`c_init_code`) or null.
nlohmann::json method_json(section::MethodResult const& result) {
  if (auto const* text = std::get_if<std::string>(&result)) return *text;
  if (auto const* list = std::get_if<std::vector<std::string>>(&result)) return *list;
  return nullptr;
}

void print_text_block(std::string const& title, std::string const& text) {
  std::cout << "==> " << title << " <==\n" << text;
  if (!text.empty() && text.back() != '\n') std::cout << '\n';
}

void print_text(section::Expansion const& e, std::string const& cache_version) {
  for (auto const& m : section::expansion_methods()) {
    std::string const method(m.name);
    nlohmann::json const value = method_json(section::method_result(e, m));
    if (value.is_array()) {
      if (value.empty()) print_text_block(method, "");
      for (std::size_t i = 0; i < value.size(); ++i) {
        print_text_block(method + "[" + std::to_string(i) + "]", value[i].get<std::string>());
      }
    } else if (value.is_null()) {
      print_text_block(method, "(not implemented: no `code` section and no --func-name)\n");
    } else {
      print_text_block(method, value.get<std::string>());
    }
  }
  print_text_block("c_code_cache_version", cache_version);
}

int run(Options const& o) {
  section::OpDescription op;
  section::NodeContext node;
  try {
    op.inputs = section::parse_type_list(o.inputs, "input");
    op.outputs = section::parse_type_list(o.outputs, "output");
    auto params = section::parse_params(o.params);
    op.has_params = !params.empty();
    if (op.has_params) op.params = section::params_spec(params);
    node = section::single_node_context(op);
    if (o.func_name) section::check_func_name(*o.func_name);
    section::check_padding(o.num_inputs, "--num-inputs");
    section::check_padding(o.num_outputs, "--num-outputs");
    // The node name is pasted into APPLY_SPECIFIC's `##`; the default holds the hash placeholder.
    if (o.node_name) section::check_c_identifier(*o.node_name, "--node-name");
  } catch (section::signature_error const& e) {
    std::cerr << "section-expand: error: " << e.what() << "\n";
    return exit_usage;
  }
  if (o.node_name) node.node_name = *o.node_name;
  op.func_name = o.func_name;
  op.num_inputs = o.num_inputs;
  op.num_outputs = o.num_outputs;
  op.check_input = o.check_input;

  section::SourceManager sm;
  std::vector<section::SourceSpec> specs;
  for (std::string const& f : o.files) specs.push_back({f, f});
  section::SectionSet sections = section::load_sections(sm, specs);
  if (!sections.diagnostics.empty()) std::cerr << section::render_text(sections.diagnostics, sm);
  if (!sections.ok()) {
    // The diagnostics above already say it, with a location, when the parser reported it.
    if (!section::has_errors(sections.diagnostics)) {
      std::cerr << "section-expand: error: " << sections.error->message << "\n";
    }
    return exit_usage;
  }

  section::ExpandOptions options;
  options.line_directives = !o.no_line_directives;
  options.newline_fix = !o.no_newline_fix;
  section::Expansion expansion = section::expand(sm, sections, op, node, options);
  if (!expansion.diagnostics.empty()) std::cerr << section::render_text(expansion.diagnostics, sm);
  if (section::has_errors(expansion.diagnostics)) return exit_usage;

  std::string cache_version = section::op_cache_version(sm, sections, op, options);
  if (o.format == "json") {
    nlohmann::json out = nlohmann::json::object();
    for (auto const& m : section::expansion_methods())
      out[std::string(m.name)] = method_json(section::method_result(expansion, m));
    out["c_code_cache_version"] = cache_version;
    std::cout << out.dump(2) << "\n";
  } else {
    print_text(expansion, cache_version);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Prints what each c_* method of an ExternalCOp becomes for one signature, with the C names "
      "PyTensor's CLinker gives a single-node graph.",
      "section-expand"};
  Options o;
  app.add_option("FILE", o.files, "section files, in the op's order")->required();
  app.add_option("--inputs", o.inputs,
                 "input types, e.g. float64[:],float64[:] (tensor dtype[:], dtype[:,:], ...; "
                 "scalar int64; object: no dtype)");
  app.add_option("--outputs", o.outputs, "output types, same syntax as --inputs");
  app.add_option("--params", o.params, "ParamsType fields, e.g. k:int64,alpha:float64");
  app.add_option("--func-name", o.func_name, "the op's func_name, e.g. APPLY_SPECIFIC(f)");
  app.add_option("--node-name", o.node_name,
                 "the node name (default node_<<<<HASH_PLACEHOLDER>>>>_0)");
  app.add_option("--num-inputs", o.num_inputs, "_cop_num_inputs (pads the call with NULL)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--num-outputs", o.num_outputs, "_cop_num_outputs (pads the call with NULL)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--check-input,!--no-check-input", o.check_input,
               "emit DTYPE_/TYPENUM_/ITEMSIZE_ macros (the op's check_input; default on)");
  app.add_flag("--no-line-directives", o.no_line_directives,
               "no #line directives (byte-for-byte like PyTensor)");
  app.add_flag("--no-newline-fix", o.no_newline_fix,
               "end code/code_cleanup without a newline, as PyTensor does");
  app.add_option("--format", o.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.set_version_flag("--version", std::string("section-expand ") + section::version);
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : exit_usage;
  }
  return run(o);
}
