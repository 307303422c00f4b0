// Where LSP meets the text: `file://` URIs and positions (lines and UTF-16 code units).
#include "lsp_text.hpp"

#include <algorithm>
#include <cctype>

namespace lint_server {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

/// `file:///a%20b/op.c` → `/a b/op.c`; another scheme is kept whole (linted under that name).
std::string path_of(std::string const& uri) {
  std::string_view rest = uri;
  if (!rest.starts_with("file://")) return uri;
  rest.remove_prefix(7);
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    int hi = 0, lo = 0;
    if (rest[i] == '%' && i + 2 < rest.size() && (hi = hex_digit(rest[i + 1])) >= 0 &&
        (lo = hex_digit(rest[i + 2])) >= 0) {
      path += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

/// `/a b/op.c` → `file:///a%20b/op.c` (the inverse of `path_of`).
std::string uri_of(std::string const& path) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string uri = "file://";
  for (char const c : path) {
    auto const byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || std::string_view("/-._~").find(c) != std::string_view::npos) {
      uri += c;
    } else {
      uri += '%';
      uri += hex[byte >> 4];
      uri += hex[byte & 15];
    }
  }
  return uri;
}

/// A byte offset of `text` as an LSP position (line, UTF-16 code units).
json position(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 0, line_start = 0;
  for (std::size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  std::size_t units = 0;
  for (std::size_t i = line_start; i < offset; ++i) {
    auto const byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte
    units += byte >= 0xF0 ? 2 : 1;        // outside the BMP: a surrogate pair
  }
  return {{"line", line}, {"character", units}};
}

/// An LSP position as a byte offset of `text` (clamped to the line's end, or the text's).
std::size_t offset_of(std::string_view text, Position const& pos) {
  std::size_t at = 0;
  for (std::size_t l = 0; l < pos.line && at < text.size(); ++at)
    if (text[at] == '\n') ++l;
  for (std::size_t units = 0; at < text.size() && text[at] != '\n' && units < pos.character;) {
    auto const byte = static_cast<unsigned char>(text[at]);
    units += byte >= 0xF0 ? 2 : 1;
    ++at;
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  }
  return at;
}

json lsp_range(std::string_view text, std::size_t begin, std::size_t end) {
  return {{"start", position(text, begin)}, {"end", position(text, end)}};
}

}  // namespace lint_server
