// section-lint: the rule registry, `--explain` text and `--select`/`--ignore` prefix selection.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "lint/checks.hpp"

namespace section {

std::span<LintRule const> lint_rules() {
  static std::vector<LintRule> const all = [] {
    std::vector<LintRule> rules;
    for (auto family : {lint_detail::parser_rules(), lint_detail::structure_rules(),
                        lint_detail::macro_scope_rules(), lint_detail::apply_specific_rules(),
                        lint_detail::control_flow_rules(), lint_detail::signature_rules(),
                        lint_detail::suppression_rules()})
      rules.insert(rules.end(), family.begin(), family.end());
    std::sort(rules.begin(), rules.end(),
              [](LintRule const& a, LintRule const& b) { return a.code < b.code; });
    return rules;
  }();
  return all;
}

LintRule const* find_lint_rule(std::string_view code) {
  auto const rules = lint_rules();
  auto const it = std::lower_bound(rules.begin(), rules.end(), code,
                                   [](LintRule const& r, std::string_view c) { return r.code < c; });
  return it != rules.end() && it->code == code ? &*it : nullptr;
}

std::string explain_lint_rule(LintRule const& rule) {
  std::string out = "# " + std::string(rule.code) + " (" + std::string(rule.name) + ")\n\n";
  out += std::string(rule.summary) + ".\n\n";
  out += "Severity: " + std::string(to_string(rule.severity)) + ". Reported by " +
         (rule.reported_by_parser ? "the parser (also when an op is loaded)" : "section-lint") +
         ".\n\n";
  out += rule.documentation;
  return out;
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

namespace lint_detail {

Diagnostic make_diagnostic(std::string_view code, std::string message, SourceRange range) {
  Diagnostic d;
  d.code = std::string(code);
  auto const* rule = find_lint_rule(code);
  d.severity = rule ? rule->severity : Severity::error;
  d.message = std::move(message);
  d.range = range;
  return d;
}

}  // namespace lint_detail
}  // namespace section
