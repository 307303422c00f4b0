// The `c_*` method strings PyTensor's `ExternalCOp` returns for one apply: each section wrapped
// in its macro blocks, and the main function call built from `func_name`.
#include "section/expand.hpp"

#include "expand/line_directives.hpp"
#include "expand/macros.hpp"
#include "section/names.hpp"

namespace section {
namespace {

using detail::MacroBlock;

Diagnostic signature_diagnostic(std::string code, std::string message) {
  Diagnostic d;
  d.code = std::move(code);
  d.message = std::move(message);
  return d;
}

void check_dtypes(std::vector<std::optional<std::string>> const& dtypes, char const* role,
                  std::vector<Diagnostic>& diagnostics) {
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] && !dtype_info(*dtypes[i])) {
      diagnostics.push_back(signature_diagnostic(
          "SE101", std::string("unknown dtype `") + *dtypes[i] + "` for " + role + " " +
                       std::to_string(i) + " (known: bool, int8..int64, uint8..uint64, "
                       "float16, float32, float64, complex64, complex128)"));
    }
  }
}

void check_signature(ApplySignature const& s, std::vector<Diagnostic>& diagnostics) {
  check_dtypes(s.input_dtypes, "input", diagnostics);
  check_dtypes(s.output_dtypes, "output", diagnostics);
  if (!s.input_names.empty() && s.input_names.size() != s.input_dtypes.size()) {
    diagnostics.push_back(signature_diagnostic(
        "SE102", "the signature has " + std::to_string(s.input_dtypes.size()) +
                     " input types but " + std::to_string(s.input_names.size()) +
                     " input names"));
  }
  if (!s.output_names.empty() && s.output_names.size() != s.output_dtypes.size()) {
    diagnostics.push_back(signature_diagnostic(
        "SE102", "the signature has " + std::to_string(s.output_dtypes.size()) +
                     " output types but " + std::to_string(s.output_names.size()) +
                     " output names"));
  }
  // The function name and the padding reach the generated call: checked before any of it is.
  try {
    if (s.func_name) check_func_name(*s.func_name);
  } catch (section::signature_error const& e) {
    diagnostics.push_back(signature_diagnostic("SE104", e.what()));
  }
  try {
    check_padding(s.num_inputs, "num_inputs (_cop_num_inputs)");
    check_padding(s.num_outputs, "num_outputs (_cop_num_outputs)");
  } catch (section::signature_error const& e) {
    diagnostics.push_back(signature_diagnostic("SE105", e.what()));
  }
}

/// Builds the method strings; `sm`, `sections` and `options` are the same for every method.
class Expander {
 public:
  Expander(SourceManager const& sm, SectionSet const& sections, ApplySignature const& signature,
           ExpandOptions const& options)
      : sm_(sm), sections_(sections), sig_(signature), options_(options),
        macros_(detail::apply_macros(signature, signature.check_input)) {}

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

  std::string init_code_struct(Section const& section) const {
    MacroBlock sub = detail::sub_macros(sig_.init_fail, sig_.params_name);
    std::string out =
        opening("c_init_code_struct", true) + macros_.defines + "\n" + sub.defines + "\n";
    append_text(out, section, "c_init_code_struct");
    return out + "\n" + sub.undefs + "\n" + macros_.undefs;
  }

  /// `c_code` from a `code` section, and `c_code_cleanup`: no leading newline, and in the
  /// reference no trailing one either.
  std::string with_io_macros(Section const& section, std::string_view method) const {
    MacroBlock sub = detail::sub_macros(sig_.fail, sig_.params_name);
    MacroBlock io = detail::io_macros(sig_.input_names, sig_.output_names);
    std::string out = opening(method, false) + macros_.defines + "\n" + sub.defines + "\n" +
                      io.defines + "\n";
    append_text(out, section, method);
    out += "\n" + io.undefs + "\n" + sub.undefs + "\n" + macros_.undefs;
    if (options_.newline_fix) out += '\n';
    return out;
  }

  /// `c_code` with a func_name: the reference's indented call template, byte for byte.
  std::string function_call() const {
    MacroBlock macros = detail::apply_macros(sig_, false);
    std::string const i16(16, ' '), i18(18, ' '), i20(20, ' ');
    std::string params = sig_.params_name.empty() ? "" : ", " + sig_.params_name;
    // One line of the template per statement; multi-line macros and FAIL keep their own
    // indentation after the first line, as in the reference.
    std::string out = opening("c_code", true) + i16 + macros.defines + "\n";
    out += i16 + "{\n";
    std::string const args = sig_.function_args ? *sig_.function_args : detail::function_arguments(sig_);
    out += i18 + "if (" + *sig_.func_name + "(" + args + params +
           ") != 0) {\n";
    out += i20 + sig_.fail + "\n";
    out += i18 + "}\n";
    out += i16 + "}\n";
    return out + i16 + macros.undefs + "\n" + i16;
  }

 private:
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
  ApplySignature const& sig_;
  ExpandOptions const& options_;
  MacroBlock macros_;
};

}  // namespace

Expansion expand(SourceManager const& sm, SectionSet const& sections,
                 ApplySignature const& signature, ExpandOptions const& options) {
  Expansion result;
  check_signature(signature, result.diagnostics);
  if (has_errors(result.diagnostics)) return result;

  Expander expander(sm, sections, signature, options);
  auto macros = detail::apply_macros(signature, signature.check_input);
  result.macro_defines = std::move(macros.defines);
  result.macro_undefs = std::move(macros.undefs);
  if (Section const* s = sections.find("init_code")) {
    result.init_code.push_back(expander.plain(*s, "c_init_code"));
  }
  if (Section const* s = sections.find("support_code")) {
    result.support_code = expander.plain(*s, "c_support_code");
  }
  if (Section const* s = sections.find("init_code_apply")) {
    result.init_code_apply = expander.with_apply_macros(*s, "c_init_code_apply");
  }
  if (Section const* s = sections.find("support_code_apply")) {
    result.support_code_apply = expander.with_apply_macros(*s, "c_support_code_apply");
  }
  if (Section const* s = sections.find("support_code_struct")) {
    result.support_code_struct = expander.with_apply_macros(*s, "c_support_code_struct");
  }
  if (Section const* s = sections.find("cleanup_code_struct")) {
    result.cleanup_code_struct = expander.with_apply_macros(*s, "c_cleanup_code_struct");
  }
  if (Section const* s = sections.find("init_code_struct")) {
    result.init_code_struct = expander.init_code_struct(*s);
  }

  Section const* code = sections.find("code");
  if (signature.func_name && code) {
    Diagnostic d = signature_diagnostic(
        "SE103", "a `code` section cannot be combined with a function name (`" +
                     *signature.func_name + "`): remove one of them");
    if (!code->blocks.empty()) d.range = code->blocks.front().marker;
    result.diagnostics.push_back(std::move(d));
  } else if (signature.func_name) {
    result.code = expander.function_call();
  } else if (code) {
    result.code = expander.with_io_macros(*code, "c_code");
  }
  if (Section const* s = sections.find("code_cleanup")) {
    result.code_cleanup = expander.with_io_macros(*s, "c_code_cleanup");
  }
  return result;
}

}  // namespace section
