// section-lint: GitLab Code Quality reports (the JSON GitLab shows as merge request findings),
// in the shape ruff gives them.
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "section/lint.hpp"

namespace section {
namespace {

char const* gitlab_severity(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warning: return "minor";
    case Severity::error: return "major";
  }
  return "major";
}

// FNV-1a, 64 bits: the same text gives the same fingerprint on every run and machine.
std::uint64_t fnv1a(std::string const& text, std::uint64_t hash = 14695981039346656037ull) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string report_path(std::string const& path, std::string const& project_dir) {
  if (project_dir.empty()) return path;
  namespace fs = std::filesystem;
  std::error_code ec;
  auto const relative = fs::absolute(path, ec).lexically_normal().lexically_relative(
      fs::absolute(project_dir, ec).lexically_normal());
  return relative.empty() ? path : relative.generic_string();
}

}  // namespace

std::string render_gitlab(std::vector<Diagnostic> const& ds, SourceManager const& sm,
                          std::string const& project_dir) {
  auto report = nlohmann::ordered_json::array();  // ruff's order of keys
  std::set<std::uint64_t> used;
  for (auto const& d : ds) {
    std::string path;
    std::size_t begin = 1, end = 1;
    if (d.range.valid()) {
      auto const& file = sm.file(d.range.file);
      path = report_path(file.path(), project_dir);
      begin = file.line_column(d.range.begin).line;
      end = file.line_column(d.range.end).line;
    }
    // Without the line, so that a finding keeps its fingerprint when code above it moves (as
    // in ruff); a repeat of the same finding in a file is told apart by chaining the hash.
    auto fingerprint = fnv1a(d.code + '\0' + d.message + '\0' + path);
    while (!used.insert(fingerprint).second)
      fingerprint = fnv1a(std::to_string(fingerprint), fingerprint);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fingerprint));
    // GitLab shows no `check_name`, so the description starts with the code (as in ruff).
    report.push_back({{"check_name", d.code},
                      {"description", d.code + ": " + d.message},
                      {"severity", gitlab_severity(d.severity)},
                      {"fingerprint", hex},
                      {"location", {{"path", path}, {"lines", {{"begin", begin}, {"end", end}}}}}});
  }
  return report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace section
