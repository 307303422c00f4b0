// Every diagnostic code libsection reports (parser, linter, expander, compiler): the one place
// each code's name, severity and documentation are written. Every emitter goes through it.
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

/// Every code, sorted by code.
std::span<DiagnosticCode const> diagnostic_codes();
DiagnosticCode const* find_diagnostic_code(std::string_view code);

/// `section-lint --explain CODE`: a heading with the code and its name, the summary, the severity,
/// the stage that reports it, then the documentation (Markdown).
std::string explain_code(DiagnosticCode const& code);

/// A diagnostic of `code` with the severity the table gives it. Throws `std::logic_error` for a
/// code missing from the table (a bug in libsection, caught by its tests).
Diagnostic make_diagnostic(std::string_view code, std::string message, SourceRange range = {});

}  // namespace section
