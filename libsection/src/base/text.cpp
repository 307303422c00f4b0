// Small text helpers shared by the messages of every stage.
#include "base/text.hpp"

namespace section {

std::string bounded_quote(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "… (" + std::to_string(text.size()) + " bytes)";
}

std::string location_text(SourceRange const& r, SourceManager const& sm) {
  if (!r.valid()) return "libsection";
  auto const lc = sm.line_column(r.file, r.begin);
  return sm.file(r.file).path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column);
}

}  // namespace section
