// `#line` directives around user fragments, so compilers and debuggers point at the `.c` file.
#include "expand/line_directives.hpp"

#include <algorithm>
#include <cctype>

namespace section::detail {
namespace {

std::string const& line_path(SourceManager const& sm, SectionSet const& sections, FileId file,
                             ExpandOptions const& options) {
  auto it = std::find(sections.files.begin(), sections.files.end(), file);
  auto index = static_cast<std::size_t>(it - sections.files.begin());
  if (index < options.line_paths.size() && !options.line_paths[index].empty()) {
    return options.line_paths[index];
  }
  return sm.file(file).path();
}

}  // namespace

std::string generated_file(ExpandOptions const& options, std::string_view method) {
  return options.resume_file + " " + std::string(method);
}

std::string line_directive(std::size_t line, std::string_view path) {
  return "#line " + std::to_string(line) + " " + c_string_literal(path);
}

std::string c_string_literal(std::string_view path) {
  std::string out = "\"";
  for (char c : path) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

bool append_fragment(std::string& out, SourceManager const& sm, SectionSet const& sections,
                     Section const& section, ExpandOptions const& options,
                     std::string_view method) {
  if (!options.line_directives || section.blocks.empty()) {
    out += section.text;
    return false;
  }
  bool any_text = false;
  for (Block const& block : section.blocks) {
    std::string_view body = std::string_view(sm.file(block.body.file).text())
                                .substr(block.body.begin, block.body.end - block.body.begin);
    if (body.empty()) continue;
    // A directive must start its own line; the previous file may not end with a newline.
    if (!out.empty() && out.back() != '\n') out += '\n';
    std::size_t line = sm.line_column(block.body.file, block.body.begin).line;
    // A body normally starts with the newline ending its marker line: that newline then ends
    // the directive, and the text after it is the marker's next line.
    bool starts_with_newline = body.front() == '\n';
    out += line_directive(starts_with_newline ? line + 1 : line,
                          line_path(sm, sections, block.body.file, options));
    if (!starts_with_newline) out += '\n';
    out += body;
    any_text = true;
  }
  if (!any_text) return false;
  if (out.back() != '\n') out += '\n';
  auto directive_line = static_cast<std::size_t>(std::count(out.begin(), out.end(), '\n')) + 1;
  out += line_directive(directive_line + 1, generated_file(options, method));
  return true;
}

std::optional<std::string> line_directive_path(std::string_view line) {
  line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
  if (!line.starts_with("#line ")) return std::nullopt;
  line.remove_prefix(6);
  std::size_t const digits = line.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos || line.substr(digits, 2) != " \"" ||
      line.size() < digits + 3 || line.back() != '"')
    return std::nullopt;
  std::string_view const literal = line.substr(digits + 2, line.size() - digits - 3);
  std::string path;
  for (std::size_t i = 0; i < literal.size(); ++i) {  // undoes c_string_literal
    char c = literal[i];
    if (c == '"') return std::nullopt;
    if (c == '\\') {
      if (++i == literal.size()) return std::nullopt;
      c = literal[i] == 'n' ? '\n' : literal[i];
    }
    path += c;
  }
  return path;
}

}  // namespace section::detail

namespace section {

std::string relocate_line_directives(std::string_view module_text, std::string_view module_path,
                                     std::string_view resume_file) {
  // `#line <digits> "<resume_file> <method>"`: the literal without its closing quote.
  std::string resume_prefix = detail::c_string_literal(resume_file);
  resume_prefix.pop_back();
  std::string out;
  out.reserve(module_text.size());
  std::size_t physical_line = 1;
  std::size_t pos = 0;
  while (pos < module_text.size()) {
    std::size_t end = module_text.find('\n', pos);
    if (end == std::string_view::npos) end = module_text.size();
    std::string_view line = module_text.substr(pos, end - pos);
    std::string_view rest = line.substr(std::min(line.find_first_not_of(" \t"), line.size()));
    bool is_resume = false;
    if (rest.starts_with("#line ")) {
      std::string_view number_and_file = rest.substr(6);
      std::size_t digits = number_and_file.find_first_not_of("0123456789");
      std::string_view file = digits == std::string_view::npos || digits == 0
                                  ? std::string_view()
                                  : number_and_file.substr(digits);
      is_resume = file.starts_with(" " + resume_prefix) && file.size() > resume_prefix.size() + 1 &&
                  file.ends_with('"');
    }
    if (is_resume) {
      out += "#line " + std::to_string(physical_line + 1) + " " +
             detail::c_string_literal(module_path);
    } else {
      out += line;
    }
    if (end < module_text.size()) out += '\n';
    pos = end + 1;
    ++physical_line;
  }
  return out;
}

}  // namespace section
