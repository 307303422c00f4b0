// The linker's face: ops from section files, and a graph's module as it is built.
#include "section/linker.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "base/text.hpp"
#include "linker/build/flags.hpp"
#include "parse/c_tokens.hpp"
#include "parse/declarations.hpp"
#include "parse/hidden_values.hpp"
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

// A value passed as a scalar where the function takes an array (or the other way round) would
// only show up as a compile error in generated code: say which input, and what it needs.
void check_main_function_inputs(OpDescription const& spec, SourceManager const& sm,
                                SectionSet const& sections, NodeContext const& ctx) {
  if (!spec.func_name) return;
  auto const parameters = c_scan::main_function_parameters(sm, sections, *spec.func_name);
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

std::vector<HiddenValue> SectionOp::hidden_values(std::vector<bool> const& dual_inputs,
                                                  std::vector<bool> const& dual_outputs) const {
  std::vector<Block> blocks;
  for (auto const& section : sections_.sections)
    blocks.insert(blocks.end(), section.blocks.begin(), section.blocks.end());
  std::vector<std::string> parameters;
  if (op_.func_name)
    if (auto written = c_scan::main_function_parameters(*sm_, sections_, *op_.func_name))
      for (auto const& p : *written) parameters.push_back(p.name());
  std::vector<HiddenValue> out;
  for (auto const& found : detail::find_hidden_values(*sm_, blocks)) {
    if (found.suppressed) continue;
    auto const role =
        role_of(found.array, dual_inputs.size(), parameters, op_.num_inputs.value_or(0));
    auto const& duals = role && role->input ? dual_inputs : dual_outputs;
    if (role && role->index < duals.size() && !duals[role->index]) continue;  // a plain array
    std::string const macro = role ? std::string(role->input ? "DTYPE_INPUT_" : "DTYPE_OUTPUT_") +
                                         std::to_string(role->index)
                                   : std::string();
    HiddenValue hidden{detail::hidden_value_diagnostic(found, macro), std::nullopt};
    hidden.diagnostic.severity = Severity::error;
    if (role && role->input) hidden.input = role->index;
    out.push_back(std::move(hidden));
  }
  return out;
}

std::vector<Diagnostic> SectionOp::values_hidden_from(std::vector<bool> const& dual_inputs,
                                                      std::vector<bool> const& dual_outputs) const {
  std::vector<Diagnostic> out;
  for (auto& hidden : hidden_values(dual_inputs, dual_outputs))
    out.push_back(std::move(hidden.diagnostic));
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

namespace {

/// Which outputs of an op hold dual numbers in its derivative: the float ones.
std::vector<bool> float_outputs(std::vector<CTypePtr> const& outputs) {
  std::vector<bool> floats;
  for (auto const& type : outputs) {
    auto const dtype = dtype_name(*type);
    floats.push_back(dtype == "float32" || dtype == "float64");
  }
  return floats;
}

/// The refusal the casts `diagnostics` make: the op, then each cast at its line.
DerivativeRefusal derivative_refusal(SectionOp const& sections,
                                     std::vector<Diagnostic> diagnostics) {
  std::string message = sections.name() + ": its gradient cannot be derived from its C code";
  for (auto const& d : diagnostics)
    message += "\n" + location_text(d.range, sections.sources()) + ": error: " + d.message;
  return {std::move(message), std::move(diagnostics)};
}

}  // namespace

DerivativeRefusals derivative_refusals(SectionOp const& sections,
                                       std::vector<bool> const& dual_inputs,
                                       std::vector<bool> const& dual_outputs) {
  auto const hidden = sections.hidden_values(dual_inputs, dual_outputs);
  DerivativeRefusals refusals;
  if (hidden.empty()) return refusals;
  std::vector<Diagnostic> all;
  std::map<std::size_t, std::vector<Diagnostic>> by_input;
  for (auto const& h : hidden) {
    all.push_back(h.diagnostic);
    if (h.input) by_input[*h.input].push_back(h.diagnostic);
    else refusals.every = true;
  }
  refusals.all = derivative_refusal(sections, std::move(all));
  if (refusals.every) return refusals;
  for (auto& [input, diagnostics] : by_input)
    refusals.inputs.emplace(input, derivative_refusal(sections, std::move(diagnostics)));
  return refusals;
}

COpPtr derivative_op(SectionOp const& sections, COpPtr code, DerivativeSpec spec) {
  auto hidden = sections.values_hidden_from(spec.differentiated, float_outputs(spec.outputs));
  if (!hidden.empty()) {
    auto refusal = derivative_refusal(sections, std::move(hidden));
    throw LinkError(refusal.message, std::move(refusal.diagnostics));
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

SectionGraph section_op_graph(OpDescription op, std::vector<NamedType> params,
                              std::shared_ptr<SourceManager const> files, SectionSet sections,
                              BuildFlags flags) {
  if (!op.inputs || !op.outputs)
    throw std::invalid_argument("an op's graph needs its input and output types");
  auto params_type = make_params_type(std::move(params));
  op.has_params = params_type != nullptr;
  if (params_type) op.params = params_type->spec();
  auto const in = ctypes_for(*op.inputs), out = ctypes_for(*op.outputs);
  auto section_op = std::make_shared<SectionOp>(
      std::move(op), std::move(files), std::move(sections), ExpandOptions{}, std::move(flags));
  return {single_op_graph(section_op, in, out, params_type), std::move(params_type)};
}

std::string signature_text(std::string const& name, std::vector<CTypePtr> const& inputs,
                           std::vector<CTypePtr> const& outputs) {
  std::string s = name + "(";
  for (std::size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i]->describe();
  s += ") -> ";
  for (std::size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + outputs[i]->describe();
  return s;
}

DerivativeSpec derivative_spec(std::string const& mode, std::vector<CTypePtr> outputs,
                               std::vector<bool> differentiated, std::vector<bool> cotangents,
                               int width) {
  DerivativeSpec spec;
  if (mode == "pullback:forward") spec.method = DerivativeSpec::Method::forward;
  else if (mode == "pullback:reverse") spec.method = DerivativeSpec::Method::reverse;
  else if (mode != "pullback" && mode != "pushforward" && mode != "record")
    throw std::invalid_argument(
        "mode must be 'pullback', 'pullback:forward', 'pullback:reverse', 'pushforward' or "
        "'record', not '" +
        mode + "'");
  spec.mode = mode == "pushforward" ? DerivativeSpec::Mode::pushforward
              : mode == "record"    ? DerivativeSpec::Mode::record
                                    : DerivativeSpec::Mode::pullback;
  spec.outputs = std::move(outputs);
  spec.differentiated = std::move(differentiated);
  spec.cotangents = std::move(cotangents);
  spec.width = width;
  return spec;
}

std::vector<Diagnostic> check_op_compiles(OpDescription op, std::vector<NamedType> params,
                                          std::shared_ptr<SourceManager const> files,
                                          SectionSet sections, PythonEnvironment const& python,
                                          ModuleCache const& cache, SourceManager& sm) {
  if (!op.inputs || !op.outputs)
    throw std::invalid_argument("a compile check needs the op's input and output types");
  auto const built =
      section_op_graph(std::move(op), std::move(params), std::move(files), std::move(sections));
  return check_module(generate_module(built.graph), python, cache, sm);
}

}  // namespace section
