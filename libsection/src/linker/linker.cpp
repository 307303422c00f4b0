// The linker's face: ops from section files, and a graph's module as it is built.
#include "section/linker.hpp"

#include <algorithm>
#include <memory>

#include "linker/build/flags.hpp"
#include "parse/c_tokens.hpp"
#include "parse/declarations.hpp"
#include "section/expand.hpp"
#include "section/names.hpp"

namespace section {

// ---- ops from section files ----------------------------------------------------------------

SectionOp::SectionOp(OpDescription op, std::shared_ptr<SourceManager const> sm, SectionSet sections,
                     ExpandOptions options, BuildFlags flags)
    : op_(std::move(op)), sm_(std::move(sm)), sections_(std::move(sections)),
      options_(std::move(options)), flags_(std::move(flags)) {
  if (!sm_) throw std::invalid_argument("SectionOp needs the SourceManager of its files");
  check_display_name(op_.name, "op name");
  if (op_.func_name) check_func_name(*op_.func_name);
  check_padding(op_.num_inputs, "num_inputs");
  check_padding(op_.num_outputs, "num_outputs");
}

namespace {

/// One parameter of a C function as written: its text, whether it is a pointer or array, and
/// whether its type is plainly a number (a typedef may hide a pointer, so only these count).
struct WrittenParameter {
  std::string text;
  bool pointer = false;
  bool number = false;
  bool type_seen = false;
};

bool is_number_type_word(std::string_view word) {
  static constexpr std::string_view words[] = {
      "bool",    "char",     "short",    "int",       "long",     "float",     "double",
      "signed",  "unsigned", "size_t",   "ptrdiff_t", "int8_t",   "int16_t",   "int32_t",
      "int64_t", "uint8_t",  "uint16_t", "uint32_t",  "uint64_t", "Py_ssize_t"};
  for (auto w : words)
    if (word == w) return true;
  return word.starts_with("npy_") || word.starts_with("DTYPE_");
}

/// The parameters between the parentheses of `decl`, split at the top-level commas.
std::vector<WrittenParameter> written_parameters(std::string_view text,
                                                 c_scan::Declaration const& decl) {
  std::vector<WrittenParameter> out(1);
  auto const inside = c_scan::tokenize(text, decl.parameters_begin + 1, decl.parameters_end - 1);
  int depth = 0;
  for (auto const& token : inside.tokens) {
    std::string_view const spelling = text.substr(token.begin, token.end - token.begin);
    if (spelling == "(" || spelling == "[" || spelling == "{" || spelling == "<") ++depth;
    if (spelling == ")" || spelling == "]" || spelling == "}" || spelling == ">") --depth;
    if (depth == 0 && spelling == ",") {
      out.push_back({});
      continue;
    }
    out.back().pointer = out.back().pointer || spelling == "*" || spelling == "[";
    bool const qualifier = spelling == "const" || spelling == "volatile";
    if (!qualifier && !out.back().type_seen) {  // the first word of its type decides
      out.back().type_seen = true;
      out.back().number = is_number_type_word(spelling);
    }
    if (!out.back().text.empty()) out.back().text += ' ';
    out.back().text.append(spelling);
  }
  return out;
}

/// The parameters of the function `func_name` as a support section declares or defines it;
/// nothing when none does (a header may declare it: the compiler then has the last word).
std::optional<std::vector<WrittenParameter>> main_function_parameters(
    SourceManager const& sm, SectionSet const& sections, std::string const& func_name) {
  std::string const wanted = c_scan::main_function_name(func_name);
  for (auto const& section : sections.sections) {
    if (!may_declare_main_function(section.tag)) continue;
    for (auto const& block : section.blocks) {
      std::string_view const text = sm.file(block.body.file).text();
      auto const body = c_scan::tokenize(text, block.body.begin, block.body.end);
      for (auto const& decl : c_scan::functions_named(text, body.tokens, wanted)) {
        if (!decl.parameter_count) continue;
        if (*decl.parameter_count == 0) return std::vector<WrittenParameter>{};
        return written_parameters(text, decl);
      }
    }
  }
  return std::nullopt;
}

// A value passed as a scalar where the function takes an array (or the other way round) would
// only show up as a compile error in generated code: say which input, and what it needs.
void check_main_function_inputs(OpDescription const& spec, SourceManager const& sm,
                                SectionSet const& sections, NodeContext const& ctx) {
  if (!spec.func_name) return;
  auto const parameters = main_function_parameters(sm, sections, *spec.func_name);
  if (!parameters) return;
  for (std::size_t i = 0; i < ctx.input_types.size() && i < parameters->size(); ++i) {
    CType const& type = *ctx.input_types[i];
    if (!type.dtype()) continue;  // only the built-in tensors and scalars are known here
    bool const passes_pointer = type.c_declare("v", {}, true).find('*') != std::string::npos;
    auto const& parameter = (*parameters)[i];
    // A scalar where it takes a pointer; an array where it takes a plain number.
    bool const mismatch =
        passes_pointer ? !parameter.pointer && parameter.number : parameter.pointer;
    if (!mismatch) continue;
    std::string const wanted = parameter.pointer ? "an array" : "a scalar";
    throw InputTypeError(spec.name + " input " + std::to_string(i) + ": expected " + wanted +
                         " (`" + *spec.func_name + "` takes `" + parameter.text + "`), got " +
                         (passes_pointer ? "an array of type " : "a scalar of type ") +
                         type.describe() +
                         (parameter.pointer ? "; pass a NumPy array" : "; pass a number"));
  }
}

}  // namespace

Expansion SectionOp::expansion(NodeContext const& node) const {
  check_main_function_inputs(op_, *sm_, sections_, node);
  return expand(*sm_, sections_, op_, node, options_);
}

OpCode SectionOp::generate(NodeContext const& node) const {
  Expansion e = expansion(node);
  if (has_errors(e.diagnostics) || !e.code) {
    std::string message = op_.name + ": cannot expand its sections";
    for (auto const& d : e.diagnostics)
      if (d.is_error()) message += "\n  " + d.message;
    if (!e.code && e.diagnostics.empty())
      message += "\n  no `code` section and no function name: give func_name or a `code` section";
    throw LinkError(message, e.diagnostics);
  }
  OpCode code;
  code.support_code = {std::move(e.support_code)};
  code.code = std::move(*e.code);
  static_cast<ApplyCode&>(code) = std::move(static_cast<ApplyCode&>(e));  // the strings both share
  static_cast<BuildFlags&>(code) = flags_;
  return code;
}

Graph single_op_graph(COpPtr op, std::vector<CTypePtr> const& inputs,
                      std::vector<CTypePtr> const& outputs,
                      std::shared_ptr<ParamsType const> params) {
  if (outputs.empty()) throw std::invalid_argument("an op needs at least one output type");
  Graph g;
  std::vector<std::size_t> ins;
  for (std::size_t i = 0; i < inputs.size(); ++i) ins.push_back(g.add_input(inputs[i]));
  std::optional<std::size_t> params_var;
  if (params) params_var = g.add_constant(std::move(params), "params");
  for (auto v : g.add_apply(std::move(op), ins, outputs, params_var)) g.add_output(v);
  return g;
}

ModuleSource generate_module(Graph const& graph) {
  ModuleSource module = write_module(graph);
  decide_compile_flags(module);
  return module;
}

}  // namespace section
