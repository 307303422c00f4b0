// A small, forgiving C/C++ tokenizer for the linter: identifiers, punctuation, comments and
// preprocessor directives of one section body, with byte offsets into the file.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace section::lint_detail {

enum class TokenKind { identifier, number, literal, punct };

/// A token outside comments and directives. Offsets are absolute in the file's text.
struct Token {
  TokenKind kind;
  std::size_t begin;
  std::size_t end;
};

struct Comment {
  std::size_t begin;
  std::size_t end;
  bool terminated;  ///< false for a `/*` comment still open at the end of the body
};

/// A `#name ...` line (continuations included). `macro` is the identifier after `#define`/`#undef`.
struct Directive {
  std::string_view name;
  std::optional<Token> macro;
};

struct TokenizedBody {
  std::vector<Token> tokens;  ///< code tokens only: no comments, nothing from directive lines
  std::vector<Comment> comments;
  std::vector<Directive> directives;
};

/// Tokenizes `text[begin, end)`. Linear, never reads outside the range, accepts any bytes.
/// `::` and `->` are single tokens; every other punctuation character is its own token.
TokenizedBody tokenize(std::string_view text, std::size_t begin, std::size_t end);

}  // namespace section::lint_detail
