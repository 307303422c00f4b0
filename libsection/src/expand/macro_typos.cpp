// Names one typo away from a macro the expander generates: the linter's SL305 and the hints of
// a failed compile both ask here.
#include <algorithm>
#include <optional>
#include <string>

#include "base/text.hpp"
#include "section/expand.hpp"

namespace section {
namespace {

/// A generated name a typo is measured against: `stem` itself, or `stem_<k>` when indexed.
struct Target {
  std::string_view stem;
  bool indexed;
};

// `DTYPE_PARAM_<name>` is left out: its tail is the user's own parameter name.
constexpr Target targets[] = {
    {"FAIL", false},          {"PARAMS", false},        {"APPLY_SPECIFIC", false},
    {"PARAMS_TYPE", false},   {"INPUT", true},          {"OUTPUT", true},
    {"DTYPE_INPUT", true},    {"DTYPE_OUTPUT", true},   {"TYPENUM_INPUT", true},
    {"TYPENUM_OUTPUT", true}, {"ITEMSIZE_INPUT", true}, {"ITEMSIZE_OUTPUT", true},
};

/// Only names spelled like the generated ones are candidates: upper case, digits, underscores.
bool shaped_like_generated(std::string_view name) {
  if (name.size() < 4 || name.size() > 40 || name[0] < 'A' || name[0] > 'Z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

/// `DTYPE_OUPUT_0` → stem `DTYPE_OUPUT` and index `_0`; a name without a `_<digits>` tail is
/// all stem.
std::pair<std::string_view, std::string_view> split_index(std::string_view name) {
  auto const underscore = name.find_last_of('_');
  if (underscore == std::string_view::npos || underscore == 0 || underscore + 1 == name.size())
    return {name, {}};
  auto const tail = name.substr(underscore + 1);
  if (!std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {name, {}};
  return {name.substr(0, underscore), name.substr(underscore)};
}

/// How far `stem` is from `target` when it is a likely misspelling of it. Shorter names allow
/// fewer edits: two edits of `DTYPE_INPUT` reach `DTYPE_INT`, and one edit of `FAIL` reaches
/// ordinary words (`TAIL`, `FALL`), so there only a swap of two neighbouring letters counts.
std::optional<std::size_t> typo_distance(std::string_view stem, std::string_view target) {
  std::size_t const allowed = target.size() >= 12 ? 2 : target.size() >= 5 ? 1 : 0;
  std::size_t const gap =
      stem.size() > target.size() ? stem.size() - target.size() : target.size() - stem.size();
  if (gap > allowed) return std::nullopt;  // also skips the quadratic distance
  std::size_t const distance = edit_distance(stem, target);
  if (distance == 0) return std::nullopt;
  if (distance <= allowed) return distance;
  std::string a(stem), b(target);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (distance == 1 && a == b) return distance;  // the same letters: a swap
  return std::nullopt;
}

}  // namespace

std::optional<std::string> intended_generated_macro(std::string_view name) {
  if (!shaped_like_generated(name) || classify_generated_macro(name).family != MacroFamily::none)
    return std::nullopt;
  auto const [stem, index] = split_index(name);
  std::optional<std::string_view> best;
  std::size_t best_distance = 0;
  bool tied = false;
  for (Target const& target : targets) {
    if (target.indexed == index.empty()) continue;
    auto const distance = typo_distance(stem, target.stem);
    if (!distance) continue;
    if (!best || *distance < best_distance) {
      best = target.stem, best_distance = *distance, tied = false;
    } else if (*distance == best_distance) {
      tied = true;
    }
  }
  if (!best || tied) return std::nullopt;  // no guess, or no single best one
  return std::string(*best) + std::string(index);
}

}  // namespace section
