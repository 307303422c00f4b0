// UTF-8 as Python reads it: strict validation and `str.isspace()` for stripping.
#include "base/utf8.hpp"

#include <array>
#include <cstdint>
#include <cstring>

namespace section {

namespace {

/// One row of Unicode's table of well-formed UTF-8 sequences: lead bytes `first..last` start a
/// sequence of `length` bytes whose second byte lies in `low..high` (which rules out overlongs,
/// surrogates and code points above U+10FFFF); later bytes are always 80..BF.
struct SequenceRule {
  unsigned char first, last;
  std::size_t length;
  unsigned char low, high;
};

constexpr std::array<SequenceRule, 8> sequence_rules = {{
    {0xC2, 0xDF, 2, 0x80, 0xBF},
    {0xE0, 0xE0, 3, 0xA0, 0xBF},
    {0xE1, 0xEC, 3, 0x80, 0xBF},
    {0xED, 0xED, 3, 0x80, 0x9F},
    {0xEE, 0xEF, 3, 0x80, 0xBF},
    {0xF0, 0xF0, 4, 0x90, 0xBF},
    {0xF1, 0xF3, 4, 0x80, 0xBF},
    {0xF4, 0xF4, 4, 0x80, 0x8F},
}};

SequenceRule const* rule_for(unsigned char lead) {
  for (auto const& rule : sequence_rules)
    if (lead >= rule.first && lead <= rule.last) return &rule;
  return nullptr;
}

/// Past the ASCII run from `i`, eight bytes at a time while they last.
std::size_t skip_ascii(unsigned char const* p, std::size_t i, std::size_t n) {
  while (i + 8 <= n) {
    std::uint64_t word;
    std::memcpy(&word, p + i, 8);
    if (word & 0x8080808080808080ULL) break;
    i += 8;
  }
  while (i < n && p[i] < 0x80) ++i;
  return i;
}

/// Python's reason why the `available` bytes at `p` are not a sequence `rule` allows, or null.
char const* sequence_error(unsigned char const* p, std::size_t available,
                           SequenceRule const& rule) {
  for (std::size_t k = 1; k < rule.length; ++k) {
    if (k >= available) return "unexpected end of data";
    bool const ok =
        k == 1 ? (p[k] >= rule.low && p[k] <= rule.high) : (p[k] >= 0x80 && p[k] <= 0xBF);
    if (!ok) return "invalid continuation byte";
  }
  return nullptr;
}

}  // namespace

std::optional<Utf8Error> find_invalid_utf8(std::string_view s) {
  auto const* p = reinterpret_cast<unsigned char const*>(s.data());
  std::size_t const n = s.size();
  for (std::size_t i = skip_ascii(p, 0, n); i < n; i = skip_ascii(p, i, n)) {
    auto const* rule = rule_for(p[i]);
    if (!rule) return Utf8Error{i, "invalid start byte"};
    if (char const* reason = sequence_error(p + i, n - i, *rule)) return Utf8Error{i, reason};
    i += rule->length;
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
