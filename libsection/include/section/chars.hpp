// What a C identifier is made of, stated once for every stage and tool that reads one.
#pragma once

namespace section {

/// A letter or `_`: what a C identifier starts with. ASCII only; the C scanner also takes GCC's
/// `$` and the bytes of UTF-8 sequences (parse/c_tokens.cpp).
constexpr bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/// A letter, a digit or `_`: what a C identifier goes on with.
constexpr bool is_identifier_char(char c) {
  return is_identifier_start(c) || (c >= '0' && c <= '9');
}

}  // namespace section
