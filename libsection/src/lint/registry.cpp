// The code table, assembled from the codes each stage defines beside its checks; the rules (its
// SL codes) and `--select`/`--ignore` prefix selection.
#include <algorithm>
#include <initializer_list>
#include <optional>
#include <stdexcept>

#include "lint/checks.hpp"
#include "parse/c_language.hpp"
#include "parse/checks.hpp"
#include "parse/hidden_values.hpp"
#include "parse/read.hpp"

namespace section {

std::span<DiagnosticCode const> diagnostic_codes() {
  // One list per file that defines codes: a new code is listed with its file's own.
  static std::vector<DiagnosticCode> const table = [] {
    std::vector<DiagnosticCode> all;
    for (auto const codes : std::initializer_list<std::span<DiagnosticCode const* const>>{
             expander_codes(), detail::reading_rules(), detail::judging_rules(),
             detail::c_language_rules(), detail::hidden_value_rules(),
             lint_detail::structure_rules(), lint_detail::macro_scope_rules(),
             lint_detail::macro_typo_rules(), lint_detail::apply_specific_rules(),
             lint_detail::control_flow_rules(), lint_detail::signature_rules(),
             lint_detail::suppression_rules(), compiler_codes()})
      for (auto const* code : codes) all.push_back(*code);
    std::sort(all.begin(), all.end(),
              [](DiagnosticCode const& a, DiagnosticCode const& b) { return a.code < b.code; });
    return all;
  }();
  return table;
}

DiagnosticCode const* find_diagnostic_code(std::string_view code) {
  auto const codes = diagnostic_codes();
  auto const it =
      std::lower_bound(codes.begin(), codes.end(), code,
                       [](DiagnosticCode const& c, std::string_view k) { return c.code < k; });
  return it != codes.end() && it->code == code ? &*it : nullptr;
}

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
