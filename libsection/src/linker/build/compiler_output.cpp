// The compiler's output as diagnostics: gcc's and clang's `file:line:col: kind: message` lines,
// read as untrusted text; and a command as a line a user can paste into a shell.
#include <algorithm>
#include <cstdint>

#include "linker/build/compile.hpp"
#include "parse/read.hpp"
#include "section/codes.hpp"

namespace section {

namespace {

/// One `path:line[:column]: kind: message` line of gcc or clang output.
struct CompilerLine {
  std::string_view path;
  std::size_t row = 0, column = 0;  // column 0: none given
  std::string_view kind, message;
};

// Digits as a number, saturating instead of overflowing (a hostile log must not throw).
std::size_t saturating_number(std::string_view digits) {
  std::size_t n = 0;
  for (char c : digits) {
    std::size_t const d = static_cast<std::size_t>(c - '0');
    n = n > (SIZE_MAX - d) / 10 ? SIZE_MAX : n * 10 + d;
  }
  return n;
}

// The digits ending just before `end`: their start (== end when there are none).
std::size_t digits_before(std::string_view line, std::size_t end) {
  std::size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  return begin;
}

// A linear scan, no regex (std::regex recurses per character and overflows the stack on long
// lines). The leftmost `: kind: ` preceded by `:line` or `:line:column` after a non-empty path
// wins, as the shortest path in `^(.+?):(\d+)(:(\d+))?: (kind): (.*)$` would. GCC leaves the
// column out on very long lines, so it is optional.
std::optional<CompilerLine> read_compiler_line(std::string_view line) {
  static constexpr std::string_view kinds[] = {"fatal error", "error", "warning", "note"};
  for (std::size_t colon = line.find(": "); colon != std::string_view::npos;
       colon = line.find(": ", colon + 1)) {
    std::string_view kind;
    for (auto k : kinds) {
      auto const rest = line.substr(colon + 2);
      if (rest.size() >= k.size() + 1 && rest.substr(0, k.size()) == k && rest[k.size()] == ':') {
        kind = k;
        break;
      }
    }
    if (kind.empty()) continue;
    // `:digits` right before the colon; one more `:digits` before that means line and column.
    std::size_t const last = digits_before(line, colon);
    if (last == colon || last == 0 || line[last - 1] != ':') continue;
    CompilerLine out;
    out.kind = kind;
    std::size_t path_end = last - 1;
    std::size_t const first = digits_before(line, path_end);
    if (first < path_end && first > 1 && line[first - 1] == ':') {
      out.row = saturating_number(line.substr(first, path_end - first));
      out.column = saturating_number(line.substr(last, colon - last));
      path_end = first - 1;
    } else {
      out.row = saturating_number(line.substr(last, colon - last));
    }
    if (path_end == 0) continue;
    out.path = line.substr(0, path_end);
    std::size_t message_begin = colon + 2 + kind.size() + 1;
    if (message_begin < line.size() && line[message_begin] == ' ') ++message_begin;
    out.message = line.substr(std::min(message_begin, line.size()));
    return out;
  }
  return std::nullopt;
}

// Compiler messages quote user code; a message is kept to a readable size.
std::string bounded_message(std::string_view message) {
  constexpr std::size_t limit = 2000;
  if (message.size() <= limit) return std::string(message);
  return std::string(message.substr(0, limit)) + "... (" + std::to_string(message.size()) +
         " bytes)";
}

}  // namespace

FileId file_named(std::string const& path, SourceManager& sm) {
  FileId file = no_file;
  for (FileId id = 0; id < sm.size(); ++id)
    if (sm.file(id).path() == path) file = id;
  // Only regular files of bounded size: the path comes from the compiler's output.
  if (file == no_file)
    if (auto text = detail::read_regular_file(path); auto* bytes = std::get_if<std::string>(&text))
      file = sm.add(path, std::move(*bytes));
  return file;
}

namespace {

/// The log with each newline inside the name of a file of `sm` made a NUL byte, which no path
/// holds: the compiler writes such a name as it is, splitting its lines (`a<LF>b.c:3:5: error:`),
/// and `#line` directives name the section files as they are named.
std::string names_on_one_line(std::string log, SourceManager const& sm) {
  for (FileId id = 0; id < sm.size(); ++id) {
    std::string const& name = sm.file(id).path();
    if (name.find('\n') == std::string::npos) continue;
    std::string joined = name;
    std::replace(joined.begin(), joined.end(), '\n', '\0');
    for (auto at = log.find(name); at != std::string::npos; at = log.find(name, at + name.size()))
      log.replace(at, name.size(), joined);
  }
  return log;
}

}  // namespace

std::vector<Diagnostic> parse_compiler_output(std::string const& log_text, SourceManager& sm) {
  std::vector<Diagnostic> out;
  std::string const log = names_on_one_line(log_text, sm);
  std::string_view const text(log);
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto const m = read_compiler_line(line);
    if (!m) continue;
    std::string path(m->path);
    std::replace(path.begin(), path.end(), '\0', '\n');
    FileId const file = file_named(path, sm);
    SourceRange range{};
    if (file != no_file) {
      auto const& f = sm.file(file);
      std::size_t const start = f.line_start(m->row);
      std::size_t const line_end = std::min(f.text().size(), f.text().find('\n', start));
      std::size_t const offset = m->column == 0 || m->column - 1 > line_end - start
                                     ? (m->column ? line_end : start)
                                     : start + m->column - 1;
      range = {file, offset, offset};
    }
    if (m->kind == "note") {
      if (!out.empty()) out.back().notes.push_back({bounded_message(m->message), range});
      continue;
    }
    out.push_back(make_diagnostic(m->kind == "warning" ? compile_warning : compile_error,
                                  bounded_message(m->message), range));
  }
  return out;
}

std::vector<std::string> dependency_file_paths(std::string_view text) {
  std::vector<std::string> paths;
  std::string word;
  bool target = true;  // the first word, up to its colon
  auto end_word = [&] {
    if (target && !word.empty() && word.back() == ':') {
      target = false;
    } else if (!target && !word.empty()) {
      paths.push_back(word);
    }
    word.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char const c = text[i];
    char const next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '\\' && (next == ' ' || next == '#')) {
      word += next;
      ++i;
    } else if (c == '\\' && (next == '\n' || next == '\r')) {
      end_word();
      ++i;
    } else if (c == '$' && next == '$') {
      word += '$';
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      end_word();
    } else {
      word += c;
    }
  }
  end_word();
  return paths;
}

std::string shell_quote(std::vector<std::string> const& argv) {
  std::string out;
  for (auto const& a : argv) {
    if (!out.empty()) out += ' ';
    bool const plain =
        !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_./=+,:@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace section
