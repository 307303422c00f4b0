// section-lint SL305: identifiers one typo away from a macro the expander generates.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>

#include "base/text.hpp"
#include "lint/checks.hpp"

namespace section::lint_detail {
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

/// The generated name `name` most likely misspells, if exactly one is closest.
std::optional<std::string> intended_macro(std::string_view name) {
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

}  // namespace

void check_macro_typos(FileView const& file, std::vector<Diagnostic>& out) {
  // A name the file `#define`s anywhere is the user's own macro, however close it is.
  std::unordered_set<std::string_view> defined;
  auto const collect = [&](TokenizedBody const& body) {
    for (auto const& directive : body.directives)
      if (directive.name == "define" && directive.macro)
        defined.insert(file.spelling(*directive.macro));
  };
  collect(file.prelude);
  for (auto const& block : file.blocks) collect(block.body);

  for (auto const& block : file.blocks) {
    if (!is_section_tag(block.block.tag)) continue;  // SL201 already
    for (auto const& token : block.body.tokens) {
      if (token.kind != TokenKind::identifier) continue;
      auto const name = file.spelling(token);
      if (!shaped_like_generated(name) || defined.contains(name) ||
          classify_generated_macro(name).family != MacroFamily::none)
        continue;
      auto const intended = intended_macro(name);
      if (!intended) continue;
      auto d = make_diagnostic("SL305",
                               backquoted(name) + " is not a generated macro; did you mean " +
                                   backquoted(*intended) + "?",
                               file.range(token));
      d.fix = FixIt{"replace with " + backquoted(*intended), file.range(token), *intended};
      out.push_back(std::move(d));
    }
  }
}

}  // namespace section::lint_detail
