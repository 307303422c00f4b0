// The one diagnostic type of libsection: parser, expander, linter and compiler all report with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "section/source.hpp"

namespace section {

enum class Severity { info, warning, error };

char const* to_string(Severity s);

/// Secondary information attached to a diagnostic, with an optional location of its own.
struct Note {
  std::string message;
  SourceRange range{};
};

/// Whether `section-lint --fix` may apply a fix-it unasked (as in ruff): `safe` keeps what the
/// file means (it only removes noise); `unsafe` guesses at intent or can change the meaning.
enum class Applicability { safe, unsafe };

char const* to_string(Applicability a);

/// A suggested edit: replace the text of `range` by `replacement`.
struct FixIt {
  std::string message;  // what the edit does, e.g. "replace with `support_code_apply`"
  SourceRange range{};
  std::string replacement;
  Applicability applicability = Applicability::unsafe;  // new fixes are never applied unasked
};

/// A problem found in a user's file. Collected into vectors, rendered later; never thrown.
///
/// `code` is stable and never reused (`SL201`); `message` is lower-case-first where libsection
/// words it, but keeps the reference loaders' exact wording as a prefix where one exists
/// (`Unknown section type (in file x.c): tag`), so code matching those messages keeps working.
struct Diagnostic {
  std::string code;
  Severity severity = Severity::error;
  std::string message;
  SourceRange range{};  // primary location; invalid when the problem has none (e.g. no files)
  std::vector<Note> notes;
  std::optional<FixIt> fix;

  bool is_error() const { return severity == Severity::error; }
};

bool has_errors(std::vector<Diagnostic> const& diagnostics);

}  // namespace section
