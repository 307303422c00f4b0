// Checking names that reach generated source (see section/names.hpp).
#include "section/names.hpp"

#include <string>

#include "base/text.hpp"
#include "base/utf8.hpp"
#include "section/chars.hpp"

namespace section {
namespace {

// A bounded, printable quote of a name for an error message (the name may be huge or hostile).
std::string quoted(std::string_view name) {
  constexpr std::size_t shown = 60;
  std::string out;
  for (char c : name.substr(0, shown)) {
    auto const u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? '?' : c;
  }
  if (find_invalid_utf8(out)) out = "(not UTF-8)";
  if (name.size() > shown) out += "... (" + std::to_string(name.size()) + " bytes)";
  return "`" + out + "`";
}

// Parses a possibly qualified identifier at `pos`, blanks around it allowed.
bool read_qualified(std::string_view s, std::size_t& pos) {
  while (pos < s.size() && is_blank(s[pos])) ++pos;
  for (;;) {
    if (pos >= s.size() || !is_identifier_start(s[pos])) return false;
    while (pos < s.size() && is_identifier_char(s[pos])) ++pos;
    if (s.substr(pos, 2) != "::") break;
    pos += 2;
  }
  while (pos < s.size() && is_blank(s[pos])) ++pos;
  return true;
}

}  // namespace

bool is_c_identifier(std::string_view name) {
  if (name.empty() || !is_identifier_start(name.front())) return false;
  for (char c : name)
    if (!is_identifier_char(c)) return false;
  return true;
}

// C17's and C++20's keywords (and C++'s alternative operator spellings): generated modules
// are compiled as C++, and an op may declare its code C.
// clang-format off
constexpr std::string_view reserved_words[] = {
    "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn",
    "_Static_assert", "_Thread_local", "alignas", "alignof", "and", "and_eq", "asm", "auto",
    "bitand", "bitor", "bool", "break", "case", "catch", "char", "char16_t", "char32_t", "char8_t",
    "class", "co_await", "co_return", "co_yield", "compl", "concept", "const", "const_cast",
    "consteval", "constexpr", "constinit", "continue", "decltype", "default", "delete", "do",
    "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float",
    "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
    "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
    "public", "register", "reinterpret_cast", "requires", "restrict", "return", "short", "signed",
    "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
    "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned",
    "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
// clang-format on

bool is_reserved_word(std::string_view name) {
  for (auto const& w : reserved_words)
    if (w == name) return true;
  return false;
}

void check_c_identifier(std::string_view name, std::string_view what) {
  if (!is_c_identifier(name))
    throw signature_error(std::string(what) + " " + quoted(name) +
                          ": not a C identifier (letters, digits and `_`, not starting with a "
                          "digit)");
  if (is_reserved_word(name))
    throw signature_error(std::string(what) + " " + quoted(name) +
                          ": a reserved word of C or C++, which cannot name a field of the "
                          "generated params struct; rename it");
}

void check_func_name(std::string_view func_name) {
  std::size_t pos = 0;
  bool ok = read_qualified(func_name, pos);
  if (ok && pos < func_name.size() && func_name[pos] == '(') {  // a macro call: M(f)
    ++pos;
    ok = read_qualified(func_name, pos) && pos < func_name.size() && func_name[pos] == ')';
    ++pos;
    while (pos < func_name.size() && is_blank(func_name[pos])) ++pos;
  }
  if (ok && pos == func_name.size()) return;
  throw signature_error("func_name " + quoted(func_name) +
                        ": expected a C function name such as `f`, `ns::f` or "
                        "`APPLY_SPECIFIC(f)`");
}

namespace {

/// Why `name` cannot be shown in generated source and messages (empty: it can): printable
/// UTF-8 of 1 to `max_display_name` bytes, no backslash.
std::string display_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > max_display_name)
    return "is longer than " + std::to_string(max_display_name) + " bytes";
  if (find_invalid_utf8(name)) return "is not valid UTF-8";
  for (char c : name) {
    auto const u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "contains a control character (a newline, a tab, ...)";
    if (c == '\\') return "contains a backslash";
  }
  return {};
}

}  // namespace

void check_display_name(std::string_view name, std::string_view what) {
  std::string const problem = display_problem(name);
  if (problem.empty()) return;
  throw signature_error(std::string(what) + " " + quoted(name) + " " + problem +
                        "; it is shown in the generated source and in messages");
}

void check_header_name(std::string_view header, std::string_view what) {
  std::string_view inner = header;
  if (header.size() >= 2 && ((header.front() == '<' && header.back() == '>') ||
                             (header.front() == '"' && header.back() == '"')))
    inner = header.substr(1, header.size() - 2);
  std::string problem = inner.empty() ? "names no header" : display_problem(header);
  if (problem.empty() && inner.find_first_of("<>\"") != std::string_view::npos)
    problem = "is not one header name (`x.h`, `<x.h>` or `\"x.h\"`)";
  if (problem.empty()) return;
  throw signature_error(std::string(what) + " " + quoted(header) + " " + problem +
                        "; it is written as an #include line of the generated source");
}

void check_padding(std::optional<int> count, std::string_view what) {
  if (!count || (*count >= 0 && *count <= max_padded_arguments)) return;
  throw signature_error(std::string(what) + " is " + std::to_string(*count) + ": expected 0 to " +
                        std::to_string(max_padded_arguments) +
                        " (the number of arguments the op's function is called with)");
}

}  // namespace section
