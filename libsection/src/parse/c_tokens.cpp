// section-lint: the C/C++ tokenizer the rules look at section bodies through.
#include "parse/c_tokens.hpp"

#include <algorithm>
#include <string>

#include "section/chars.hpp"

namespace section::c_scan {
namespace {

bool is_identifier_start(unsigned char c) {
  // GCC's `$`, and the bytes of UTF-8 sequences, as in C++'s extended identifiers.
  return section::is_identifier_start(static_cast<char>(c)) || c == '$' || c >= 0x80;
}

bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

bool is_identifier_char(unsigned char c) { return is_identifier_start(c) || is_digit(c); }

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

/// String-literal encoding prefixes: those that may precede `"`/`'`, and the raw-string ones.
bool is_encoding_prefix(std::string_view word) {
  return word == "L" || word == "u" || word == "U" || word == "u8";
}
bool is_raw_prefix(std::string_view word) {
  return word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
}

Token make_token(TokenKind kind, std::size_t begin, std::size_t end) {
  Token t;
  t.begin = static_cast<std::uint32_t>(begin);
  t.end = static_cast<std::uint32_t>(end);  // < max_tokenized_bytes: fits its 30 bits
  t.kind = kind;
  return t;
}

class Scanner {
 public:
  Scanner(std::string_view text, std::size_t begin, std::size_t end)
      : text_(text), pos_(begin), end_(std::min({end, text.size(), max_tokenized_bytes})) {}

  TokenizedBody run() {
    while (pos_ < end_) {
      char const c = text_[pos_];
      if (c == '\n') {
        line_has_code_ = false;
        ++pos_;
      } else if (is_blank(c)) {
        ++pos_;
      } else if (at_line_splice()) {
        pos_ += 2;
      } else if (starts_with("//")) {
        line_comment();
      } else if (starts_with("/*")) {
        block_comment();
      } else if (c == '#' && !line_has_code_) {
        directive();
      } else {
        line_has_code_ = true;
        code_token();
      }
    }
    return std::move(out_);
  }

 private:
  bool starts_with(std::string_view s) const {
    return end_ - pos_ >= s.size() && text_.substr(pos_, s.size()) == s;
  }
  bool at_line_splice() const {
    return text_[pos_] == '\\' && pos_ + 1 < end_ && text_[pos_ + 1] == '\n';
  }
  unsigned char peek(std::size_t ahead) const {
    return pos_ + ahead < end_ ? static_cast<unsigned char>(text_[pos_ + ahead]) : 0;
  }

  void line_comment() {
    std::size_t const begin = pos_;
    pos_ += 2;
    while (pos_ < end_ && text_[pos_] != '\n') {
      pos_ += at_line_splice() ? 2 : 1;
    }
    out_.comments.push_back({begin, pos_, true});
  }

  void block_comment() {
    std::size_t const begin = pos_;
    std::size_t const close = text_.substr(0, end_).find("*/", pos_ + 2);
    bool const terminated = close != std::string_view::npos;
    pos_ = terminated ? close + 2 : end_;
    out_.comments.push_back({begin, pos_, terminated});
  }

  /// Skips a quoted literal starting at `pos_`; stops at an unescaped newline when unterminated.
  void quoted(char quote) {
    ++pos_;
    while (pos_ < end_) {
      char const c = text_[pos_];
      if (c == '\\') {
        pos_ = std::min(pos_ + 2, end_);
      } else if (c == quote) {
        ++pos_;
        return;
      } else if (c == '\n') {
        return;
      } else {
        ++pos_;
      }
    }
  }

  /// `R"delim( ... )delim"` with `pos_` on the opening quote. Falls back to a plain string
  /// when the delimiter is not valid.
  void raw_string() {
    std::size_t const open = pos_ + 1;
    std::size_t paren = open;
    while (paren < end_ && paren - open <= 16 && text_[paren] != '(' && text_[paren] != '"' &&
           !is_blank(text_[paren]) && text_[paren] != '\n' && text_[paren] != '\\' &&
           text_[paren] != ')') {
      ++paren;
    }
    if (paren >= end_ || text_[paren] != '(' || paren - open > 16) {
      quoted('"');
      return;
    }
    std::string closing = ")";
    closing.append(text_.substr(open, paren - open));
    closing.push_back('"');
    std::size_t const close = text_.substr(0, end_).find(closing, paren + 1);
    pos_ = close == std::string_view::npos ? end_ : close + closing.size();
  }

  void code_token() {
    std::size_t const begin = pos_;
    unsigned char const c = peek(0);
    if (is_identifier_start(c)) {
      while (pos_ < end_ && is_identifier_char(peek(0))) ++pos_;
      std::string_view const word = text_.substr(begin, pos_ - begin);
      char const next = static_cast<char>(peek(0));
      if (next == '"' && is_raw_prefix(word)) {
        raw_string();
        out_.tokens.push_back(make_token(TokenKind::literal, begin, pos_));
      } else if ((next == '"' || next == '\'') && is_encoding_prefix(word)) {
        quoted(next);
        out_.tokens.push_back(make_token(TokenKind::literal, begin, pos_));
      } else {
        out_.tokens.push_back(make_token(TokenKind::identifier, begin, pos_));
      }
    } else if (is_digit(c) || (c == '.' && is_digit(peek(1)))) {
      number();
      out_.tokens.push_back(make_token(TokenKind::number, begin, pos_));
    } else if (c == '"' || c == '\'') {
      quoted(static_cast<char>(c));
      out_.tokens.push_back(make_token(TokenKind::literal, begin, pos_));
    } else {
      pos_ += (starts_with("::") || starts_with("->")) ? 2 : 1;
      out_.tokens.push_back(make_token(TokenKind::punct, begin, pos_));
    }
  }

  /// A preprocessing number: digits, letters, `.`, `'` digit separators, exponent signs.
  void number() {
    while (pos_ < end_) {
      unsigned char const c = peek(0);
      if (is_identifier_char(c) || c == '.') {
        ++pos_;
      } else if (c == '\'' && is_identifier_char(peek(1))) {
        pos_ += 2;
      } else if ((c == '+' || c == '-') && pos_ > 0 &&
                 std::string_view("eEpP").find(text_[pos_ - 1]) != std::string_view::npos) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  void skip_blanks_on_line() {
    while (pos_ < end_ && (is_blank(text_[pos_]) || at_line_splice())) {
      pos_ += at_line_splice() ? 2 : 1;
    }
  }

  std::optional<Token> identifier_here() {
    if (pos_ >= end_ || !is_identifier_start(peek(0))) return std::nullopt;
    std::size_t const begin = pos_;
    while (pos_ < end_ && is_identifier_char(peek(0))) ++pos_;
    return make_token(TokenKind::identifier, begin, pos_);
  }

  void directive() {
    Directive d{{}, std::nullopt, pos_};
    ++pos_;
    skip_blanks_on_line();
    if (auto name = identifier_here()) {
      d.name = text_.substr(name->begin, name->end - name->begin);
      if (d.name == "define" || d.name == "undef") {
        skip_blanks_on_line();
        d.macro = identifier_here();
      }
    }
    // The rest of the logical line: comments are still comments, quotes still hide `//`.
    while (pos_ < end_ && text_[pos_] != '\n') {
      if (at_line_splice()) {
        pos_ += 2;
      } else if (starts_with("//")) {
        line_comment();
      } else if (starts_with("/*")) {
        block_comment();
      } else if (text_[pos_] == '"' || text_[pos_] == '\'') {
        quoted(text_[pos_]);
      } else {
        ++pos_;
      }
    }
    d.end = pos_;
    out_.directives.push_back(d);
  }

  std::string_view text_;
  std::size_t pos_;
  std::size_t end_;
  bool line_has_code_ = false;
  TokenizedBody out_;
};

}  // namespace

TokenizedBody tokenize(std::string_view text, std::size_t begin, std::size_t end) {
  return Scanner(text, begin, end).run();
}

}  // namespace section::c_scan
