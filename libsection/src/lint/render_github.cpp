// section-lint: GitHub Actions workflow commands, which show findings as annotations on the diff.
#include "section/lint.hpp"

namespace section {
namespace {

char const* command(Severity s) {
  switch (s) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::info: return "notice";
  }
  return "error";
}

/// Escaping of the runner's command syntax; property values also escape `:` and `,`.
std::string escape(std::string_view s, bool property) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '%': out += "%25"; break;
      case '\r': out += "%0D"; break;
      case '\n': out += "%0A"; break;
      case ':': out += property ? "%3A" : ":"; break;
      case ',': out += property ? "%2C" : ","; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_github(std::vector<Diagnostic> const& ds, SourceManager const& sm) {
  std::string out;
  for (auto const& d : ds) {
    out += "::";
    out += command(d.severity);
    out += ' ';
    if (d.range.valid()) {
      auto const& file = sm.file(d.range.file);
      auto const begin = file.line_column(d.range.begin);
      auto const end = file.line_column(d.range.end);
      out += "file=" + escape(file.path(), true) + ",line=" + std::to_string(begin.line);
      // Columns of a range spanning lines would be read as a rectangle; leave them out.
      if (begin.line == end.line) out += ",col=" + std::to_string(begin.column);
      out += ",endLine=" + std::to_string(end.line);
      if (begin.line == end.line) out += ",endColumn=" + std::to_string(end.column);
      out += ',';
    }
    out += "title=" + escape("section-lint (" + d.code + ")", true);
    out += "::" + escape(d.message, false) + '\n';
  }
  return out;
}

}  // namespace section
