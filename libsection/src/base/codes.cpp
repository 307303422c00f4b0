// The compiler's codes, and what every code shares: its `--explain` text and its diagnostics.
#include "section/codes.hpp"

namespace section {

constexpr DiagnosticCode compile_error{
    .code = "compile-error",
    .name = "",
    .severity = Severity::error,
    .summary = "the C compiler's error, mapped through `#line` to your `.c` file and line",
    .documentation = R"md(## What it does
Reports each error of the C compiler that built the op, at the line of the section file it
comes from (the generated module carries `#line` directives).

## Why is this bad?
The op cannot be built.

## Use instead
Fix the C code at the reported line; the full log and command are kept in the cache's
`failed/` folder.
)md",
    .reported_by = Reporter::compiler,
};

constexpr DiagnosticCode compile_warning{
    .code = "compile-warning",
    .name = "",
    .severity = Severity::warning,
    .summary = "the C compiler's warning, mapped likewise",
    .documentation = R"md(## What it does
Reports each warning of the C compiler that built the op, at the line of the section file it
comes from.

## Why is this bad?
Compiler warnings often point at real bugs (an uninitialised variable, a wrong format string).

## Use instead
Fix the C code at the reported line.
)md",
    .reported_by = Reporter::compiler,
};

constexpr DiagnosticCode compile_check{
    .code = "compile-check",
    .name = "",
    .severity = Severity::warning,
    .summary = "the compile check (`section-lint --compile`, the language server on save) "
               "could not run",
    .documentation = R"md(## What it does
Says why the section files were not compiled: no compiler found, no Python or NumPy headers
found, or an op whose module cannot be generated for the configured signature.

## Why is this bad?
Without it the compiler's own errors are not shown until the op is built.

## Use instead
Do what the message says: set `python` (`--python`, `python = "..."` in `section-lint.toml`)
to an interpreter with NumPy, run `python -m libsection editor-setup`, or set `CXX`/`CC`.
)md",
    .reported_by = Reporter::compiler,
};

std::span<DiagnosticCode const* const> compiler_codes() {
  static constexpr DiagnosticCode const* codes[] = {&compile_error, &compile_warning,
                                                    &compile_check};
  return codes;
}

std::string explain_code(DiagnosticCode const& code) {
  std::string out = "# " + std::string(code.code);
  if (!code.name.empty()) out += " (" + std::string(code.name) + ")";
  out += "\n\n" + std::string(code.summary) + ".\n\n";
  char const* reporter = "";
  switch (code.reported_by) {
    case Reporter::parser: reporter = "the parser (also when an op is loaded)"; break;
    case Reporter::linter: reporter = "section-lint"; break;
    case Reporter::expander:
      reporter = "the expander, for one apply of an op (section-expand, the Python package)";
      break;
    case Reporter::compiler: reporter = "the C compiler, when an op is built"; break;
  }
  out +=
      "Severity: " + std::string(to_string(code.severity)) + ". Reported by " + reporter + ".\n\n";
  return out + std::string(code.documentation);
}

Diagnostic make_diagnostic(DiagnosticCode const& code, std::string message, SourceRange range) {
  Diagnostic d;
  d.code = std::string(code.code);
  d.severity = code.severity;
  d.message = std::move(message);
  d.range = range;
  return d;
}

}  // namespace section
