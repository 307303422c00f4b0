// `section-lint server`: the linter as a Language Server (LSP 3.17) over stdin and stdout.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "compile_worker.hpp"
#include "section/diagnostic.hpp"
#include "section/op.hpp"
#include "section/source.hpp"

namespace lint_server {

/// What the command line's linter gives the server for one document.
struct Findings {
  section::SourceManager sm;                     ///< the document's text, as linted
  std::vector<section::Diagnostic> diagnostics;  ///< after settings and suppressions
  section::OpDescription op;                     ///< the signature the settings give the file
  /// What `--fix` would apply to the document (with `--unsafe-fixes`, the unsafe ones too): in
  /// order, none overlapping another.
  std::vector<section::FixIt> fix_all;
  /// The settings file that names a `python` for the file, which the server does not run (a
  /// folder one opens must not choose a program to run); empty when none does.
  std::string untrusted_python;
};

/// Lints `text` as the file `path` with the settings that apply to it. Throws
/// std::exception for a settings file that cannot be read (the message is shown).
using Linter = std::function<Findings(std::string const& path, std::string const& text)>;

/// Serves one client: reads JSON-RPC messages from `in`, writes to `out`, until `exit`.
/// Returns 0 after `shutdown` then `exit`, 1 when the input ends or `exit` comes first. With
/// `check`, each document whose settings give its op's signature is compile-checked on open
/// and save, on a worker thread, its diagnostics published beside the linter's.
int serve(Linter const& lint, CompileChecker const& check, std::istream& in, std::ostream& out);

}  // namespace lint_server
