// Internal: small text helpers shared by the stages.
#pragma once

#include <string>

namespace section {

/// Replaces every occurrence of `from` in `text` by `to`, left to right; text `to` brings in is
/// not searched again. An empty `from` changes nothing.
inline void replace_all(std::string& text, std::string const& from, std::string const& to) {
  if (from.empty()) return;
  for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
}

}  // namespace section
