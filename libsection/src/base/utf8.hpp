// UTF-8 as Python reads it: strict validation and `str.isspace()` for stripping.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace section {

struct Utf8Error {
  std::size_t offset;
  char const* reason;  // Python's wording, so users recognise it
};

/// The first invalid sequence, judged as Python's strict decoder does (no overlongs, no
/// surrogates, nothing above U+10FFFF).
std::optional<Utf8Error> find_invalid_utf8(std::string_view s);

/// Offset of the first code point in `s` that Python's `str.strip()` would keep, or npos.
/// `s` is valid UTF-8.
std::size_t first_non_python_space(std::string_view s);

}  // namespace section
