// Small text helpers shared by the messages of every stage.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "section/source.hpp"

namespace section {

/// `text` cut to at most about `max_bytes` at a UTF-8 character boundary, with "…" and the
/// full size appended when cut: messages quote user text, which may be a line of megabytes.
std::string bounded_quote(std::string_view text, std::size_t max_bytes);

/// `file:line:column` of the start of `r`, or `libsection` when it has no place.
std::string location_text(SourceRange const& r, SourceManager const& sm);

/// The optimal-string-alignment distance of `a` and `b`: insertions, deletions, substitutions
/// and swaps of two neighbours, each counting one. Quadratic: meant for short names.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// `text` as a C string literal, quotes and backslashes escaped (for generated code).
std::string c_string_literal(std::string_view text);

/// A space or a tab: the blanks that separate the words of a signature or a function name.
inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

/// Replaces every occurrence of `from` in `text` by `to`, left to right; text `to` brings in is
/// not searched again. An empty `from` changes nothing.
inline void replace_all(std::string& text, std::string const& from, std::string const& to) {
  if (from.empty()) return;
  for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
}

/// `names` joined by ", " (op names in messages and headings).
inline std::string join_names(std::vector<std::string> const& names) {
  std::string out;
  for (auto const& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace section
