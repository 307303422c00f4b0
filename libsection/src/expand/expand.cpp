// The `c_*` method strings PyTensor's `ExternalCOp` returns for one apply: each section wrapped
// in its macro blocks, and the main function call built from `func_name`.
#include "section/expand.hpp"

#include <cctype>

#include "base/text.hpp"
#include "expand/line_directives.hpp"
#include "expand/macros.hpp"
#include "expand/methods.hpp"
#include "parse/c_language.hpp"
#include "parse/checks.hpp"
#include "section/chars.hpp"
#include "section/codes.hpp"
#include "section/names.hpp"

namespace section {
namespace {

// The codes of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from expander_codes().

constexpr DiagnosticCode unknown_dtype{
    .code = "SE101",
    .name = "unknown-dtype",
    .severity = Severity::error,
    .summary = "a dtype the generated macros cannot describe",
    .documentation = R"md(## What it does
Reports an input or output dtype outside bool, int8..int64, uint8..uint64, float16, float32,
float64, complex64 and complex128.

## Why is this bad?
The expander defines `DTYPE_INPUT_k`, `TYPENUM_INPUT_k` and `ITEMSIZE_INPUT_k` from the dtype;
for an unknown one it cannot, and nothing is expanded.

## Example
An apply signature with the input dtype `float128`.

## Use instead
One of the dtypes listed above.
)md",
    .reported_by = Reporter::expander,
};

constexpr DiagnosticCode signature_mismatch{
    .code = "SE102",
    .name = "signature-mismatch",
    .severity = Severity::error,
    .summary = "the apply signature's names and types disagree",
    .documentation = R"md(## What it does
Reports an apply signature with a different number of input (or output) names than types.

## Why is this bad?
The expander pairs each `INPUT_k`/`OUTPUT_k` with a name and a type; with the counts apart the
macros would name variables that do not exist.

## Example
Two input dtypes and one input name.

## Use instead
One name per input and per output.
)md",
    .reported_by = Reporter::expander,
};

constexpr DiagnosticCode bad_function_name{
    .code = "SE104",
    .name = "bad-function-name",
    .severity = Severity::error,
    .summary = "`func_name` is not a C function name",
    .documentation = R"md(## What it does
Reports a `func_name` that is not a C identifier, a `::`-qualified name, or
`APPLY_SPECIFIC(name)`.

## Why is this bad?
The name is pasted into the generated `c_code` call; anything else would inject text into the
generated C.

## Example
`func_name = "f(x); g"`.

## Use instead
`f`, `ns::f` or `APPLY_SPECIFIC(f)`.
)md",
    .reported_by = Reporter::expander,
};

constexpr DiagnosticCode bad_padding{
    .code = "SE105",
    .name = "bad-padding",
    .severity = Severity::error,
    .summary = "`num_inputs`/`num_outputs` outside 0 to 1024",
    .documentation = R"md(## What it does
Reports a padding count (`_cop_num_inputs`, `_cop_num_outputs`) below 0 or above 1024.

## Why is this bad?
The expander generates one argument per padded input and output; such counts are mistakes and
would generate an unusable call.

## Example
`_cop_num_inputs = -1`.

## Use instead
A count from 0 to 1024, or none (the node's own arity).
)md",
    .reported_by = Reporter::expander,
};

}  // namespace

std::span<DiagnosticCode const* const> expander_codes() {
  static constexpr DiagnosticCode const* codes[] = {&unknown_dtype, &signature_mismatch,
                                                    &bad_function_name, &bad_padding};
  return codes;
}

namespace {

using detail::MacroBlock;

// The statement of `c_code` that calls an op's main function: `if (func_name(args) != 0) {`.
constexpr std::string_view call_open = "if (";
constexpr std::string_view call_close = ") != 0) {";

void check_dtypes(std::vector<std::optional<std::string>> const& dtypes, char const* role,
                  std::vector<Diagnostic>& diagnostics) {
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] && !dtype_info(*dtypes[i])) {
      diagnostics.push_back(
          make_diagnostic(unknown_dtype, std::string("unknown dtype `") + *dtypes[i] + "` for " +
                                             role + " " + std::to_string(i) +
                                             " (known: bool, int8..int64, uint8..uint64, "
                                             "float16, float32, float64, complex64, complex128)"));
    }
  }
}

void check_signature(OpDescription const& op, NodeContext const& node,
                     std::vector<Diagnostic>& diagnostics) {
  check_dtypes(node.input_dtypes, "input", diagnostics);
  check_dtypes(node.output_dtypes, "output", diagnostics);
  if (!node.inputs.empty() && node.inputs.size() != node.input_dtypes.size()) {
    diagnostics.push_back(make_diagnostic(
        signature_mismatch, "the signature has " + std::to_string(node.input_dtypes.size()) +
                                " input types but " + std::to_string(node.inputs.size()) +
                                " input names"));
  }
  if (!node.outputs.empty() && node.outputs.size() != node.output_dtypes.size()) {
    diagnostics.push_back(make_diagnostic(
        signature_mismatch, "the signature has " + std::to_string(node.output_dtypes.size()) +
                                " output types but " + std::to_string(node.outputs.size()) +
                                " output names"));
  }
  // The function name and the padding reach the generated call: checked before any of it is.
  try {
    if (op.func_name) check_func_name(*op.func_name);
  } catch (section::signature_error const& e) {
    diagnostics.push_back(make_diagnostic(bad_function_name, e.what()));
  }
  try {
    check_padding(op.num_inputs, "num_inputs (_cop_num_inputs)");
    check_padding(op.num_outputs, "num_outputs (_cop_num_outputs)");
  } catch (section::signature_error const& e) {
    diagnostics.push_back(make_diagnostic(bad_padding, e.what()));
  }
}

/// Builds the method strings; `sm`, `sections` and `options` are the same for every method.
class Expander {
 public:
  Expander(SourceManager const& sm, SectionSet const& sections, OpDescription const& op,
           NodeContext const& node, ExpandOptions const& options)
      : sm_(sm), sections_(sections), op_(op), node_(node), options_(options),
        macros_(own_or_generated(node.macros, op.check_input)) {}

  /// A method's string from its section, with the macros the method table gives it.
  std::string method_string(Section const& section, ExpansionMethod const& method) const {
    MacroScope const scope = method.macros;
    if (scope.io) return with_io_macros(section, method.name);
    if (scope.sub) return init_code_struct(section, method.name);
    if (scope.apply) return with_apply_macros(section, method.name);
    return plain(section, method.name);
  }

 private:
  /// `c_init_code` / `c_support_code`: the text alone, no macros.
  std::string plain(Section const& section, std::string_view method) const {
    std::string out;
    // Nothing follows this text in the method's string to end the closing directive's line.
    if (append_text(out, section, method)) out += '\n';
    return out;
  }

  /// `c_{init_code,support_code}_apply`, `c_{support,cleanup}_code_struct`.
  std::string with_apply_macros(Section const& section, std::string_view method) const {
    std::string out = opening(method, true) + macros_.defines + "\n";
    append_text(out, section, method);
    return out + "\n" + macros_.undefs;
  }

  /// `c_init_code_struct`: the apply macros and the init `sub`'s `FAIL`/`PARAMS`.
  std::string init_code_struct(Section const& section, std::string_view method) const {
    MacroBlock sub = detail::sub_macros(node_.init_sub);
    std::string out = opening(method, true) + macros_.defines + "\n" + sub.defines + "\n";
    append_text(out, section, method);
    return out + "\n" + sub.undefs + "\n" + macros_.undefs;
  }

  /// `c_code` from a `code` section, and `c_code_cleanup`: no leading newline, and in the
  /// reference no trailing one either.
  std::string with_io_macros(Section const& section, std::string_view method) const {
    MacroBlock sub = detail::sub_macros(node_.sub);
    MacroBlock io = detail::io_macros(node_.inputs, node_.outputs);
    std::string out =
        opening(method, false) + macros_.defines + "\n" + sub.defines + "\n" + io.defines + "\n";
    append_text(out, section, method);
    out += "\n" + io.undefs + "\n" + sub.undefs + "\n" + macros_.undefs;
    if (options_.newline_fix) out += '\n';
    return out;
  }

 public:
  /// `c_code` with a func_name: the reference's indented call template, byte for byte.
  std::string function_call() const {
    MacroBlock macros = own_or_generated(node_.call_macros, false);
    std::string const i16(16, ' '), i18(18, ' '), i20(20, ' ');
    std::string const params_name = sub_value(node_.sub, "params");
    std::string params = params_name.empty() ? "" : ", " + params_name;
    // One line of the template per statement; multi-line macros and FAIL keep their own
    // indentation after the first line, as in the reference.
    std::string out = opening("c_code", true) + i16 + macros.defines + "\n";
    out += i16 + "{\n";
    std::string const args =
        node_.function_args ? *node_.function_args : detail::function_arguments(op_, node_);
    out += i18 + std::string(call_open) + *op_.func_name + "(" + args + params +
           std::string(call_close) + "\n";
    out += i20 + sub_value(node_.sub, "fail") + "\n";
    out += i18 + "}\n";
    out += i16 + "}\n";
    return out + i16 + macros.undefs + "\n" + i16;
  }

 private:
  /// The apply macros around a section: an overridden `get_c_macros`'s, where the node has
  /// them, in the place of the generated ones.
  MacroBlock own_or_generated(std::optional<std::pair<std::string, std::string>> const& own,
                              bool check_input) const {
    if (own) return {own->first, own->second};
    return detail::apply_macros(op_, node_, check_input);
  }

  bool append_text(std::string& out, Section const& section, std::string_view method) const {
    return detail::append_fragment(out, sm_, sections_, section, options_, method);
  }

  /// What a method's string starts with: the reference's leading newline (if any), and with
  /// `#line` on, a directive numbering the generated lines as the lines of this very string
  /// (`<libsection-generated> c_code:5` is line 5 of `c_code`, as section-expand prints it).
  std::string opening(std::string_view method, bool reference_leading_newline) const {
    if (!options_.line_directives) return reference_leading_newline ? "\n" : "";
    // Line 1 is empty (the previous code may not end with a newline), line 2 the directive.
    return "\n" + detail::line_directive(3, detail::generated_file(options_, method)) + "\n";
  }

  SourceManager const& sm_;
  SectionSet const& sections_;
  OpDescription const& op_;
  NodeContext const& node_;
  ExpandOptions const& options_;
  MacroBlock macros_;
};

}  // namespace

namespace detail {

std::optional<std::string> called_main_function(std::string_view line) {
  while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
  if (!line.starts_with(call_open) || !line.ends_with(call_close)) return std::nullopt;
  line.remove_prefix(call_open.size());
  // A name (`f`, `ns::f`), then its arguments; or a macro call `APPLY_SPECIFIC(f)`, then them.
  auto const name_end = [&](std::size_t from) {
    std::size_t i = from;
    while (i < line.size() && (is_identifier_char(line[i]) || line[i] == ':')) ++i;
    return i;
  };
  std::size_t const name = name_end(0);
  if (name == 0 || name >= line.size() || line[name] != '(') return std::nullopt;
  std::size_t const inner = name_end(name + 1);
  if (inner > name + 1 && inner + 1 < line.size() && line[inner] == ')' && line[inner + 1] == '(')
    return std::string(line.substr(0, inner + 1));
  return std::string(line.substr(0, name));
}

}  // namespace detail

Expansion expand(SourceManager const& sm, SectionSet const& sections, OpDescription const& op,
                 NodeContext const& node, ExpandOptions const& options) {
  Expansion result;
  check_signature(op, node, result.diagnostics);
  // An op declared C is refused here, at its files' lines, before any module is written.
  if (op.language == Language::c)
    for (Section const& section : sections.sections)
      detail::check_c_language(sm, section.blocks, result.diagnostics);
  if (has_errors(result.diagnostics)) return result;

  Expander expander(sm, sections, op, node, options);
  auto macros = detail::apply_macros(op, node, op.check_input);
  result.macro_defines = std::move(macros.defines);
  result.macro_undefs = std::move(macros.undefs);
  for (ExpansionMethod const& method : expansion_methods()) {
    Section const* s = sections.find(method.tag);
    if (!s || method.tag == "code") continue;  // `code` may also come from func_name: below
    std::string text = expander.method_string(*s, method);
    if (method.tag == "init_code") {
      result.init_code.push_back(std::move(text));
    } else {
      *detail::method_text(result, method.tag) = std::move(text);
    }
  }

  Section const* code = sections.find("code");
  if (op.func_name && code) {
    SourceRange const where = code->blocks.empty() ? SourceRange{} : code->blocks.front().marker;
    result.diagnostics.push_back(detail::code_section_conflict(where, *op.func_name));
  } else if (op.func_name) {
    result.code = expander.function_call();
  } else if (code) {
    result.code = expander.method_string(*code, *expansion_method_of("code"));
  }
  return result;
}

}  // namespace section
