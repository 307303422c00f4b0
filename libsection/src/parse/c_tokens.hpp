// A small, forgiving C/C++ tokenizer: identifiers, punctuation, comments and preprocessor
// directives of one section body, with byte offsets into the file (for the linter and linker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace section::c_scan {

enum class TokenKind : std::uint32_t { identifier, number, literal, punct };

/// Texts up to this size are tokenized (offsets fit the token's 30 bits); the rest is not.
inline constexpr std::size_t max_tokenized_bytes = std::size_t{1} << 30;

/// A token outside comments and directives. Offsets are absolute in the file's text. Eight
/// bytes: a file of punctuation has one token per byte, so the token list is most of the
/// linter's memory.
struct Token {
  std::uint32_t begin;
  std::uint32_t end : 30;
  TokenKind kind : 2;
};
static_assert(sizeof(Token) == 8);

struct Comment {
  std::size_t begin;
  std::size_t end;
  bool terminated;  ///< false for a `/*` comment still open at the end of the body
};

/// A `#name ...` line (continuations included). `macro` is the identifier after `#define`/`#undef`.
struct Directive {
  std::string_view name;
  std::optional<Token> macro;
  std::size_t begin = 0;  ///< the `#`
  std::size_t end = 0;    ///< the end of the logical line (its newline, or the text's end)
};

struct TokenizedBody {
  std::vector<Token> tokens;  ///< code tokens only: no comments, nothing from directive lines
  std::vector<Comment> comments;
  std::vector<Directive> directives;
};

/// Tokenizes `text[begin, end)`. Linear, never reads outside the range, accepts any bytes.
/// `::` and `->` are single tokens; every other punctuation character is its own token.
TokenizedBody tokenize(std::string_view text, std::size_t begin, std::size_t end);

}  // namespace section::c_scan
