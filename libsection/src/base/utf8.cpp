// UTF-8 as Python reads it: strict validation and `str.isspace()` for stripping.
#include "base/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace section {

std::optional<Utf8Error> find_invalid_utf8(std::string_view s) {
  auto const* p = reinterpret_cast<unsigned char const*>(s.data());
  std::size_t const n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII fast path, eight bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t word;
      std::memcpy(&word, p + i, 8);
      if (word & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char const c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return Utf8Error{i, "invalid start byte"};
    }
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= n) return Utf8Error{i, "unexpected end of data"};
      unsigned char const b = p[i + k];
      bool const ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
      if (!ok) return Utf8Error{i, "invalid continuation byte"};
    }
    i += len;
  }
  return std::nullopt;
}

namespace {

// Python's str.isspace() for one code point: what `split[0].strip()` removes.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

}  // namespace

std::size_t first_non_python_space(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto const c = static_cast<unsigned char>(s[i]);
    char32_t cp;
    std::size_t len;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if (c < 0xE0) {
      cp = c & 0x1F;
      len = 2;
    } else if (c < 0xF0) {
      cp = c & 0x0F;
      len = 3;
    } else {
      cp = c & 0x07;
      len = 4;
    }
    if (i + len > s.size()) return i;  // cannot happen for validated text; treat as non-space
    for (std::size_t k = 1; k < len; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if (!is_python_space(cp)) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace section
