// Renderers for diagnostics: clang-style text and JSON records.
#pragma once

#include <string>
#include <vector>

#include "section/diagnostic.hpp"

namespace section {

/// Where a rule's documentation lives; used by the JSON and SARIF renderers.
std::string documentation_url(std::string const& code);

/// clang style: `file:line:col: severity: message [CODE]`, the source line, a caret under the
/// range, then notes and fix-its. Diagnostics without a location start with `libsection:`.
/// `color` adds gcc's ANSI colours (for a terminal).
std::string render_text(Diagnostic const& d, SourceManager const& sm, bool color = false);
std::string render_text(std::vector<Diagnostic> const& ds, SourceManager const& sm,
                        bool color = false);

/// One line per diagnostic: `file:line:col: severity: message [CODE]`.
std::string render_concise(Diagnostic const& d, SourceManager const& sm, bool color = false);

/// A JSON array of records with keys `code`, `severity`, `message`, `filename`,
/// `location {row, column}`, `end_location`, `fix` (or null), `notes`, `url`.
std::string render_json(std::vector<Diagnostic> const& ds, SourceManager const& sm);

}  // namespace section
