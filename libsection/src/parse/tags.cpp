// The section tags: which are known, and the closest known one to a misspelled tag.
#include <algorithm>
#include <cctype>
#include <vector>

#include "section/parse.hpp"

namespace section {
namespace {

// Optimal-string-alignment distance, small strings only (tags).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t const cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

bool is_section_tag(std::string_view tag, std::vector<std::string> const& extra_tags) {
  return std::find(section_tags.begin(), section_tags.end(), tag) != section_tags.end() ||
         std::find(extra_tags.begin(), extra_tags.end(), tag) != extra_tags.end();
}

std::optional<std::string_view> suggest_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > 64) return std::nullopt;
  std::string lower(tag);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::optional<std::string_view> best;
  std::size_t best_distance = 0;
  for (auto known : section_tags) {
    auto const d = edit_distance(lower, known);
    if (!best || d < best_distance) best = known, best_distance = d;
  }
  std::size_t const allowed = std::max<std::size_t>(1, std::min<std::size_t>(3, tag.size() / 3));
  if (best_distance <= allowed) return best;
  return std::nullopt;
}

}  // namespace section
