// The linker's face: ops from section files, and a graph's module as it is built.
#include "section/linker.hpp"

#include <algorithm>
#include <memory>

#include "base/text.hpp"
#include "linker/build/flags.hpp"
#include "parse/c_tokens.hpp"
#include "parse/declarations.hpp"
#include "parse/hidden_values.hpp"
#include "section/chars.hpp"
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

/// The name a written parameter declares: its last identifier (`PyArrayObject ** z` → `z`).
std::string parameter_name(WrittenParameter const& p) {
  std::string_view text = p.text;
  std::size_t end = text.size();
  while (end > 0 && !is_identifier_char(text[end - 1])) --end;
  std::size_t begin = end;
  while (begin > 0 && is_identifier_char(text[begin - 1])) --begin;
  return std::string(text.substr(begin, end - begin));
}

/// What an array's name in the files is: input or output k (`INPUT_k`, `OUTPUT_k`, or the main
/// function's parameter of that place), or nothing when the files do not say.
struct ArrayRole {
  bool input = false;
  std::size_t index = 0;
};

std::optional<ArrayRole> role_of(std::string const& array, std::size_t inputs,
                                 std::vector<std::string> const& parameters, int padded_inputs) {
  for (auto const& [prefix, input] : {std::pair{"INPUT_", true}, std::pair{"OUTPUT_", false}}) {
    std::string_view const p = prefix;
    if (array.size() > p.size() && array.starts_with(p) &&
        std::all_of(array.begin() + static_cast<std::ptrdiff_t>(p.size()), array.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
      return ArrayRole{input, std::stoul(array.substr(p.size()))};
  }
  std::size_t const first_output =
      std::max<std::size_t>(inputs, static_cast<std::size_t>(padded_inputs));
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    if (parameters[k] != array) continue;
    if (k < inputs) return ArrayRole{true, k};
    if (k >= first_output) return ArrayRole{false, k - first_output};
  }
  return std::nullopt;
}

}  // namespace

std::vector<Diagnostic> SectionOp::values_hidden_from(std::vector<bool> const& dual_inputs,
                                                      std::vector<bool> const& dual_outputs) const {
  std::vector<Block> blocks;
  for (auto const& section : sections_.sections)
    blocks.insert(blocks.end(), section.blocks.begin(), section.blocks.end());
  std::vector<std::string> parameters;
  if (op_.func_name)
    if (auto written = main_function_parameters(*sm_, sections_, *op_.func_name))
      for (auto const& p : *written) parameters.push_back(parameter_name(p));
  std::vector<Diagnostic> out;
  for (auto const& found : detail::find_hidden_values(*sm_, blocks)) {
    if (found.suppressed) continue;
    auto const role =
        role_of(found.array, dual_inputs.size(), parameters, op_.num_inputs.value_or(0));
    auto const& duals = role && role->input ? dual_inputs : dual_outputs;
    if (role && role->index < duals.size() && !duals[role->index]) continue;  // a plain array
    std::string const macro = role ? std::string(role->input ? "DTYPE_INPUT_" : "DTYPE_OUTPUT_") +
                                         std::to_string(role->index)
                                   : std::string();
    out.push_back(detail::hidden_value_diagnostic(found, macro));
    out.back().severity = Severity::error;
  }
  return out;
}

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

COpPtr derivative_op(SectionOp const& sections, COpPtr code, DerivativeSpec spec) {
  std::vector<bool> dual_outputs;
  for (auto const& type : spec.outputs) {
    auto const dtype = dtype_name(*type);
    dual_outputs.push_back(dtype == "float32" || dtype == "float64");
  }
  auto hidden = sections.values_hidden_from(spec.differentiated, dual_outputs);
  if (!hidden.empty()) {
    std::string message = sections.name() + ": its gradient cannot be derived from its C code";
    for (auto const& d : hidden)
      message += "\n" + location_text(d.range, sections.sources()) + ": error: " + d.message;
    throw LinkError(message, std::move(hidden));
  }
  return make_derivative_op(std::move(code), std::move(spec));
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

std::vector<Diagnostic> check_op_compiles(OpDescription op, std::vector<NamedType> params,
                                          std::shared_ptr<SourceManager const> files,
                                          SectionSet sections, PythonEnvironment const& python,
                                          ModuleCache const& cache, SourceManager& sm) {
  if (!op.inputs || !op.outputs)
    throw std::invalid_argument("a compile check needs the op's input and output types");
  auto const params_type = make_params_type(std::move(params));
  op.has_params = params_type != nullptr;
  if (params_type) op.params = params_type->spec();
  auto const in = ctypes_for(*op.inputs), out = ctypes_for(*op.outputs);
  auto section_op =
      std::make_shared<SectionOp>(std::move(op), std::move(files), std::move(sections));
  ModuleSource const module = generate_module(single_op_graph(section_op, in, out, params_type));
  return check_module(module, python, cache, sm);
}

}  // namespace section
