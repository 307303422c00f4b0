// section-lint: SARIF 2.1.0 output (one run, rule metadata in tool.driver.rules).
#include <nlohmann/json.hpp>

#include "section/lint.hpp"
#include "section/render.hpp"
#include "section/version.hpp"

namespace section {
namespace {

using json = nlohmann::json;

char const* sarif_level(Severity s) {
  switch (s) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::info: return "note";
  }
  return "error";
}

/// 1-based column in Unicode code points of `offset` (SARIF's `unicodeCodePoints` column kind).
std::size_t code_point_column(SourceFile const& file, std::size_t offset) {
  auto const line = file.line_column(offset).line;
  std::size_t column = 1;
  auto const& text = file.text();
  for (std::size_t i = file.line_start(line); i < offset && i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++column;
  return column;
}

json region(SourceRange const& r, SourceManager const& sm) {
  auto const& file = sm.file(r.file);
  return {{"startLine", file.line_column(r.begin).line},
          {"startColumn", code_point_column(file, r.begin)},
          {"endLine", file.line_column(r.end).line},
          {"endColumn", code_point_column(file, r.end)}};
}

/// A relative path as a URI reference: bytes outside the unreserved set are percent-encoded.
std::string to_uri(std::string const& path) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    bool const plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

json physical_location(SourceRange const& r, SourceManager const& sm) {
  return {{"physicalLocation",
           {{"artifactLocation", {{"uri", to_uri(sm.file(r.file).path())}}},
            {"region", region(r, sm)}}}};
}

json rule_metadata(LintRule const& rule) {
  return {{"id", rule.code},
          {"name", rule.name},
          {"shortDescription", {{"text", rule.summary}}},
          {"help", {{"text", rule.documentation}, {"markdown", rule.documentation}}},
          {"helpUri", documentation_url(std::string(rule.code))},
          {"defaultConfiguration", {{"level", sarif_level(rule.severity)}}}};
}

json result(Diagnostic const& d, SourceManager const& sm) {
  json r = {
      {"ruleId", d.code}, {"level", sarif_level(d.severity)}, {"message", {{"text", d.message}}}};
  if (auto const* rule = find_lint_rule(d.code)) r["ruleIndex"] = rule - lint_rules().data();
  if (d.range.valid()) r["locations"] = json::array({physical_location(d.range, sm)});
  auto related = json::array();
  for (auto const& note : d.notes) {
    if (!note.range.valid()) continue;
    auto location = physical_location(note.range, sm);
    location["id"] = related.size();
    location["message"] = {{"text", note.message}};
    related.push_back(std::move(location));
  }
  if (!related.empty()) r["relatedLocations"] = std::move(related);
  if (d.fix && d.fix->range.valid()) {
    r["fixes"] = json::array(
        {{{"description", {{"text", d.fix->message}}},
          {"artifactChanges",
           json::array({{{"artifactLocation", {{"uri", to_uri(sm.file(d.fix->range.file).path())}}},
                         {"replacements", json::array({{{"deletedRegion", region(d.fix->range, sm)},
                                                        {"insertedContent",
                                                         {{"text", d.fix->replacement}}}}})}}})}}});
  }
  return r;
}

}  // namespace

std::string render_sarif(std::vector<Diagnostic> const& ds, SourceManager const& sm) {
  auto rules = json::array();
  for (auto const& rule : lint_rules()) rules.push_back(rule_metadata(rule));
  auto results = json::array();
  for (auto const& d : ds) results.push_back(result(d, sm));
  json const log = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       json::array(
           {{{"tool",
              {{"driver",
                {{"name", "section-lint"}, {"version", version}, {"rules", std::move(rules)}}}}},
             {"columnKind", "unicodeCodePoints"},
             {"results", std::move(results)}}})}};
  // Messages may quote bytes of a file that is not UTF-8; replace rather than throw.
  return log.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace section
