// `section-lint --compile` and the server's check on save: one op's section files compiled
// with `-fsyntax-only` for its configured signature, the compiler's errors at the user's lines.
#pragma once

#include <string>
#include <vector>

#include "section/diagnostic.hpp"
#include "section/op.hpp"
#include "section/signature.hpp"
#include "section/source.hpp"

namespace lint_compile {

/// What one compile check is of: the op's files (path and text, as the linter read them), its
/// signature, and where Python's and NumPy's headers are to be found.
struct Request {
  std::vector<std::pair<std::string, std::string>> files;
  section::OpDescription op;  ///< `inputs` and `outputs` set
  std::vector<section::NamedType> params;
  std::vector<std::string> extra_sections;
  /// The `python` setting: an interpreter to ask for the headers. Empty: the
  /// `.libsection-editor/` folder editor-setup made beside the files (or above them), else
  /// `python3` on PATH.
  std::string python;
};

/// The compiler's diagnostics in `sm`'s files (the request's files are found there by path, or
/// added), or one `compile-check` diagnostic saying why the check could not run and how to make
/// it run. Throws `section::BuildInterrupted` when stopped (`section::set_interrupt_check`).
std::vector<section::Diagnostic> compile_check(Request const& request, section::SourceManager& sm);

}  // namespace lint_compile
