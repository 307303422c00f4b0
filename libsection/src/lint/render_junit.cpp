// section-lint: JUnit XML (one test suite per file, a failing test case per finding), in the
// shape ruff gives it.
#include <filesystem>
#include <map>

#include "section/lint.hpp"

namespace section {
namespace {

// The length of the well-formed UTF-8 sequence at text[i], or 0.
std::size_t utf8_length(std::string const& text, std::size_t i) {
  auto const b = static_cast<unsigned char>(text[i]);
  std::size_t const n = b < 0x80           ? 1
                        : (b >> 5) == 0x6  ? 2
                        : (b >> 4) == 0xE  ? 3
                        : (b >> 3) == 0x1E ? 4
                                           : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

// Text for XML 1.0 attributes and content: markup escaped; control characters and bytes that
// are not UTF-8, which XML cannot hold, replaced by U+FFFD.
std::string xml(std::string const& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    char const c = text[i];
    auto const n = utf8_length(text, i);
    if (n == 0 ||
        (n == 1 && static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')) {
      out += "\xEF\xBF\xBD";
      i += n ? n : 1;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      case '\r': out += "&#13;"; break;
      default: out.append(text, i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string render_junit(std::vector<Diagnostic> const& ds, SourceManager const& sm) {
  std::map<std::string, std::vector<Diagnostic const*>> by_file;
  for (auto const& d : ds)
    by_file[d.range.valid() ? sm.file(d.range.file).path() : std::string()].push_back(&d);
  std::string const n = std::to_string(ds.size());
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"section-lint\" tests=\"" +
      (ds.empty() ? std::string("1") : n) + "\" failures=\"" + n + "\" errors=\"0\">\n";
  if (ds.empty()) {
    out += "    <testsuite name=\"section-lint\" tests=\"1\" disabled=\"0\" errors=\"0\" "
           "failures=\"0\" package=\"org.section-lint\">\n"
           "        <testcase name=\"No errors found\" classname=\"section-lint\"/>\n"
           "    </testsuite>\n";
  }
  for (auto const& [path, findings] : by_file) {
    std::string const count = std::to_string(findings.size());
    out += "    <testsuite name=\"" + xml(path) + "\" tests=\"" + count +
           "\" disabled=\"0\" errors=\"0\" failures=\"" + count +
           "\" package=\"org.section-lint\">\n";
    std::string const classname =
        xml(std::filesystem::path(path).replace_extension().generic_string());
    for (auto const* d : findings) {
      out += "        <testcase name=\"org.section-lint." + xml(d->code) + "\" classname=\"" +
             classname + "\"";
      std::string where;
      if (d->range.valid()) {
        auto const lc = sm.file(d->range.file).line_column(d->range.begin);
        out += " line=\"" + std::to_string(lc.line) + "\" column=\"" + std::to_string(lc.column) +
               "\"";
        where = "line " + std::to_string(lc.line) + ", col " + std::to_string(lc.column) + ", ";
      }
      out += ">\n            <properties>\n                <property name=\"severity\" value=\"" +
             std::string(to_string(d->severity)) +
             "\"/>\n            </properties>\n            <failure message=\"" + xml(d->message) +
             "\">" + xml(where + d->message) + "</failure>\n        </testcase>\n";
    }
    out += "    </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

}  // namespace section
