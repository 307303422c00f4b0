// The section tags: which are known, their classes, and the closest known one to a misspelled tag.
#include <algorithm>
#include <cctype>
#include <vector>

#include "base/text.hpp"
#include "section/parse.hpp"

namespace section {

bool is_section_tag(std::string_view tag, std::vector<std::string> const& extra_tags) {
  return std::find(section_tags.begin(), section_tags.end(), tag) != section_tags.end() ||
         std::find(extra_tags.begin(), extra_tags.end(), tag) != extra_tags.end();
}

bool is_file_scope_tag(std::string_view tag) {
  return tag == "support_code" || tag == "support_code_apply";
}

bool is_struct_tag(std::string_view tag) {
  return tag == "support_code_struct" || tag == "init_code_struct" || tag == "cleanup_code_struct";
}

bool may_declare_main_function(std::string_view tag) {
  return is_file_scope_tag(tag) || tag == "support_code_struct";
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
