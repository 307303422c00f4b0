// section-lint: the rules (the SL codes of the code table) and `--select`/`--ignore` prefix
// selection.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "lint/checks.hpp"

namespace section {

std::span<LintRule const> lint_rules() {
  static std::span<LintRule const> const rules = [] {
    auto const all = diagnostic_codes();
    auto const is_lint = [](DiagnosticCode const& c) { return c.code.starts_with("SL"); };
    auto const first = std::find_if(all.begin(), all.end(), is_lint);
    auto const last = std::find_if_not(first, all.end(), is_lint);
    return all.subspan(static_cast<std::size_t>(first - all.begin()),
                       static_cast<std::size_t>(last - first));
  }();
  return rules;
}

LintRule const* find_lint_rule(std::string_view code) {
  auto const* entry = find_diagnostic_code(code);
  return entry && entry->code.starts_with("SL") ? entry : nullptr;
}

RuleSelection::RuleSelection(std::vector<std::string> select, std::vector<std::string> ignore)
    : select_(std::move(select)), ignore_(std::move(ignore)) {
  auto const rules = lint_rules();
  for (auto const* list : {&select_, &ignore_}) {
    for (auto const& prefix : *list) {
      bool const matches = std::any_of(rules.begin(), rules.end(), [&](LintRule const& r) {
        return r.code.starts_with(prefix);
      });
      if (prefix.empty() || !matches)
        throw std::invalid_argument("`" + prefix + "` is not a rule code or a prefix of one");
    }
  }
}

bool RuleSelection::enabled(std::string_view code) const {
  auto const longest = [&](std::vector<std::string> const& prefixes) {
    std::size_t best = 0;
    bool any = false;
    for (auto const& p : prefixes) {
      if (code.starts_with(p)) {
        any = true;
        best = std::max(best, p.size());
      }
    }
    return any ? std::optional<std::size_t>(best) : std::nullopt;
  };
  auto const selected = select_.empty() ? std::optional<std::size_t>(0) : longest(select_);
  auto const ignored = longest(ignore_);
  if (!selected) return false;
  return !ignored || *ignored < *selected;
}

}  // namespace section
