// What a diagnostic code is: its name, severity and documentation, written once beside the
// check that reports it, and made into diagnostics from that constant (a misspelt code does not
// compile). The table of every code is the linter's (`diagnostic_codes`, lint.hpp).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "section/diagnostic.hpp"

namespace section {

/// The stage that finds the problems of a code.
enum class Reporter {
  parser,    ///< reading and splitting files; also when an op is loaded
  linter,    ///< section-lint only
  expander,  ///< expanding sections for one apply
  compiler,  ///< the C compiler's own messages, mapped back to the section files
};

/// One diagnostic code. Codes are stable and never reused: `SL` + family digit + two digits
/// (SL0 file, SL1 markers, SL2 structure, SL3 macro scope, SL4 apply-specific symbols,
/// SL5 control flow, SL6 signature, SL9 the linter's own comments), `SE1xx` for the expander,
/// `compile-error`/`compile-warning` for the compiler.
struct DiagnosticCode {
  std::string_view code;     ///< `SL301`
  std::string_view name;     ///< `fail-or-params-out-of-scope`
  Severity severity;         ///< the severity its diagnostics carry
  std::string_view summary;  ///< one line, lower-case, no trailing period
  std::string_view
      documentation;  ///< Markdown: What it does, Why is this bad?, Example, Use instead
  Reporter reported_by;
};

/// A lint rule: an `SL` code, which the parser or the linter reports.
using LintRule = DiagnosticCode;

/// The compiler's codes. They live here, below both the linker that reports them and the
/// linter whose table lists them.
extern DiagnosticCode const compile_error;
extern DiagnosticCode const compile_warning;
extern DiagnosticCode const compile_check;  ///< the compile check could not run
std::span<DiagnosticCode const* const> compiler_codes();

/// `section-lint --explain CODE`: a heading with the code and its name, the summary, the severity,
/// the stage that reports it, then the documentation (Markdown).
std::string explain_code(DiagnosticCode const& code);

/// A diagnostic of `code`, with the severity it gives.
Diagnostic make_diagnostic(DiagnosticCode const& code, std::string message, SourceRange range = {});

}  // namespace section
