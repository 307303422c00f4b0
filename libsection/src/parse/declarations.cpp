// Reading file-scope declarations out of a token stream, and the main function's parameters.
#include "parse/declarations.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "section/chars.hpp"

namespace section::c_scan {
namespace {

// Words that can precede a declarator but never name one.
constexpr std::array<std::string_view, 39> specifier_words = {
    "auto",     "bool",      "char",      "const",        "constexpr", "double",   "enum",
    "extern",   "float",     "inline",    "int",          "long",      "register", "restrict",
    "short",    "signed",    "static",    "struct",       "typedef",   "union",    "unsigned",
    "void",     "volatile",  "class",     "virtual",      "explicit",  "mutable",  "thread_local",
    "_Bool",    "_Complex",  "__inline",  "__restrict",   "typename",  "template", "operator",
    "noexcept", "constinit", "consteval", "__extension__"};

bool is_specifier(std::string_view word) {
  return std::find(specifier_words.begin(), specifier_words.end(), word) != specifier_words.end();
}

bool is_tag_keyword(std::string_view word) {
  return word == "struct" || word == "union" || word == "enum" || word == "class";
}

// Attribute-like calls whose parentheses hold no declarator.
bool is_attribute_word(std::string_view word) {
  return word == "__attribute__" || word == "__declspec" || word == "alignas" ||
         word == "_Alignas" || word == "__asm__" || word == "asm";
}

class Reader {
 public:
  static constexpr std::size_t no_body = static_cast<std::size_t>(-1);
  Reader(std::string_view text, std::span<Token const> tokens)
      : text_(text), tokens_(tokens), match_(match_brackets(text, tokens)) {}

  std::vector<Declaration> run() {
    scope(0, tokens_.size(), 0);
    return std::move(out_);
  }

 private:
  std::string_view spell(std::size_t i) const {
    return i < tokens_.size() ? text_.substr(tokens_[i].begin, tokens_[i].end - tokens_[i].begin)
                              : std::string_view{};
  }
  bool is(std::size_t i, std::string_view s) const { return i < tokens_.size() && spell(i) == s; }
  bool is_identifier(std::size_t i) const {
    return i < tokens_.size() && tokens_[i].kind == TokenKind::identifier;
  }
  bool is_name(std::size_t i) const {
    return is_identifier(i) && !is_specifier(spell(i)) && !is_attribute_word(spell(i));
  }
  /// Index just past the bracket group opening at `i` (clamped to `last`).
  std::size_t past_group(std::size_t i, std::size_t last) const {
    return std::min<std::size_t>(match_[i], last - 1) + 1;
  }
  bool opens_group(std::size_t i) const {
    auto const s = spell(i);
    return tokens_[i].kind == TokenKind::punct && (s == "(" || s == "[" || s == "{");
  }

  /// Declarations in `[first, last)`, a file scope or a namespace body `depth` levels down.
  void scope(std::size_t first, std::size_t last, std::size_t depth) {
    std::size_t start = first;
    std::size_t i = first;
    // `}` of a struct body inside the current declaration (a plain sentinel: GCC 12 warns
    // falsely about an optional here)
    std::size_t body_close = no_body;
    while (i < last) {
      if (is(i, ";")) {
        declaration(start, i, body_close);
        start = ++i;
        body_close = no_body;
      } else if (is(i, "{")) {
        std::size_t const open = i;
        std::size_t const close = std::min<std::size_t>(match_[open], last);
        i = close + 1;
        switch (brace(start, open, close, depth)) {
          case AfterBrace::declaration_done:
            start = i;
            body_close = no_body;
            break;
          case AfterBrace::declaration_continues: break;
          case AfterBrace::type_body: body_close = close; break;
        }
      } else if (opens_group(i)) {
        i = past_group(i, last);
      } else {
        ++i;
      }
    }
  }

  enum class AfterBrace { declaration_done, declaration_continues, type_body };

  /// What the declaration `[start, open)` followed by the block `{ ... }` ending at `close` is.
  AfterBrace brace(std::size_t start, std::size_t open, std::size_t close, std::size_t depth) {
    // Real code nests namespaces a few levels; a bound keeps hostile input off the stack.
    constexpr std::size_t max_depth = 32;
    if (start >= open) return AfterBrace::declaration_done;  // a stray block
    if (opens_scope(start, open)) {
      if (reads_scope(start, open) && depth < max_depth)
        scope(open + 1, std::min(close, tokens_.size()), depth + 1);
      return AfterBrace::declaration_done;
    }
    if (has_top_level(start, open, "=")) return AfterBrace::declaration_continues;  // `= {...}`
    if (ends_function_head(open - 1)) {
      add_definition(start, open);
      return AfterBrace::declaration_done;
    }
    return type_head(start, open);
  }

  /// `namespace n {` or `extern "C" {`: a body whose declarations count as the file scope's.
  bool opens_scope(std::size_t start, std::size_t open) const {
    return is(start, "namespace") || (is(start, "extern") && start + 1 < open &&
                                      tokens_[start + 1].kind == TokenKind::literal);
  }

  /// Every scope but a namespace named with `APPLY_SPECIFIC`.
  bool reads_scope(std::size_t start, std::size_t open) const {
    return !is(start, "namespace") || !contains(start, open, "APPLY_SPECIFIC");
  }

  /// Whether `[first, last)` has the token `s`.
  bool contains(std::size_t first, std::size_t last, std::string_view s) const {
    for (std::size_t k = first; k < last; ++k)
      if (is(k, s)) return true;
    return false;
  }

  /// Whether `[first, last)` has the token `s` outside brackets.
  bool has_top_level(std::size_t first, std::size_t last, std::string_view s) const {
    for (std::size_t k = first; k < last; k = opens_group(k) ? past_group(k, last) : k + 1)
      if (is(k, s)) return true;
    return false;
  }

  /// Whether the token at `i` can end a function's head: `f(...) {`, `f() const {`, ...
  bool ends_function_head(std::size_t i) const {
    static constexpr std::array<std::string_view, 5> head_ends = {")", "const", "noexcept",
                                                                  "override", "final"};
    return i < tokens_.size() &&
           std::find(head_ends.begin(), head_ends.end(), spell(i)) != head_ends.end();
  }

  /// The function defined by the head `[start, open)`, if the head declares one.
  void add_definition(std::size_t start, std::size_t open) {
    auto d = declarator(start, open);
    if (!d || d->kind != Declaration::Kind::function_declaration) return;
    d->kind = Declaration::Kind::function_definition;
    out_.push_back(std::move(*d));
  }

  /// `struct name {` declares a type. After any tag keyword the block is a type body whose
  /// declarators follow its `}`; anything else with a body is skipped whole.
  AfterBrace type_head(std::size_t start, std::size_t open) {
    for (std::size_t k = start; k < open; ++k) {
      if (is_identifier(k) && is_tag_keyword(spell(k))) {
        // Anonymous and macro-built tags (`struct APPLY_SPECIFIC(s) {`) pass.
        if (is_name(k + 1) && k + 2 == open) out_.push_back(named(Declaration::Kind::type, k + 1));
        return AfterBrace::type_body;
      }
    }
    return AfterBrace::declaration_done;
  }

  Declaration named(Declaration::Kind kind, std::size_t i) const {
    return {kind,  std::string(spell(i)), tokens_[i].begin, tokens_[i].end, false,
            false, std::nullopt};
  }

  void declaration(std::size_t start, std::size_t end, std::size_t body_close) {
    if (start >= end) return;
    if (body_close == no_body && declares_nothing_to_check(start, end)) return;
    bool const is_typedef = is(start, "typedef");
    std::size_t piece = body_close == no_body ? start : body_close + 1;
    for (std::size_t k = piece; k <= end;
         k = (k < end && opens_group(k)) ? past_group(k, end) : k + 1) {
      if (k == end || is(k, ",")) {
        if (auto d = declarator(piece, k)) {
          if (is_typedef) d->kind = Declaration::Kind::type;
          out_.push_back(std::move(*d));
        }
        piece = k + 1;
      }
    }
  }

  /// Statements without a body that declare no name, or one that may be declared again: plain
  /// typedefs (with the same type) and `extern` declarations without an initializer.
  bool declares_nothing_to_check(std::size_t start, std::size_t end) const {
    static constexpr std::array<std::string_view, 10> skipped_first_words = {
        "using",     "static_assert", "_Static_assert", "friend",    "template",
        "namespace", "public",        "private",        "protected", "typedef"};
    auto const first = spell(start);
    if (std::find(skipped_first_words.begin(), skipped_first_words.end(), first) !=
        skipped_first_words.end())
      return true;
    return first == "extern" && !contains(start, end, "=");
  }

  /// The name a declarator in `[first, last)` declares; specifiers before it (`static int x`)
  /// are skipped because the last plain name before `=`, `[` or `(` wins.
  std::optional<Declaration> declarator(std::size_t first, std::size_t last) {
    std::optional<std::size_t> candidate;
    for (std::size_t k = first; k < last; k = next_in_declarator(k, last)) {
      auto const s = spell(k);
      if (s == "=" || s == "[" || s == ":") break;
      if (s == "(") return declarator_at_paren(candidate, k, last);
      if (is_name(k)) candidate = k;
    }
    if (!candidate) return std::nullopt;
    return named(Declaration::Kind::variable, *candidate);
  }

  /// The token after `k` worth looking at in a declarator: past an attribute's arguments, past
  /// a tag's name (`struct foo x`: `foo` is a tag, not the declarator), past a bracket group.
  std::size_t next_in_declarator(std::size_t k, std::size_t last) const {
    if (is_identifier(k) && is_attribute_word(spell(k)))
      return is(k + 1, "(") ? past_group(k + 1, last) : k + 1;
    if (is_identifier(k) && is_tag_keyword(spell(k))) return k + (is_name(k + 1) ? 2 : 1);
    return opens_group(k) ? past_group(k, last) : k + 1;
  }

  /// The declarator whose `(` is at `open`, `candidate` the last name before it: `(*name)(args)`
  /// declares the name inside, `name(args)` a function, `MACRO(name)` a macro-built name.
  std::optional<Declaration> declarator_at_paren(std::optional<std::size_t> candidate,
                                                 std::size_t open, std::size_t last) {
    std::size_t const close = std::min<std::size_t>(match_[open], last);
    if (is(open + 1, "*") || is(open + 1, "&") || is(open + 1, "^")) {
      for (std::size_t j = open + 1; j < close; ++j)  // `(*name)(args)`
        if (is_name(j)) candidate = j;
      if (!candidate) return std::nullopt;
      return named(Declaration::Kind::variable, *candidate);
    }
    if (!candidate || *candidate + 1 != open) return std::nullopt;
    std::size_t const name = *candidate;
    if (spell(name) == "APPLY_SPECIFIC" || is(close + 1, "("))
      return macro_built(name, close, last);
    Declaration d = named(Declaration::Kind::variable, name);
    function(d, open, last);
    return d;
  }

  /// The name built by the macro call `name(...)` closing at `close`: `APPLY_SPECIFIC(f)`, or
  /// some other macro's; a function when a parameter list follows.
  Declaration macro_built(std::size_t name, std::size_t close, std::size_t last) {
    bool const apply_specific = spell(name) == "APPLY_SPECIFIC";
    Declaration d{Declaration::Kind::variable,
                  compact(name, close + 1),
                  tokens_[name].begin,
                  close < tokens_.size() ? tokens_[close].end : tokens_[name].end,
                  apply_specific,
                  !apply_specific,
                  std::nullopt};
    if (is(close + 1, "(")) function(d, close + 1, last);
    return d;
  }

  /// Makes `d` a function declaration whose parameter list opens at `open`.
  void function(Declaration& d, std::size_t open, std::size_t last) {
    std::size_t const close = std::min<std::size_t>(match_[open], last);
    d.kind = Declaration::Kind::function_declaration;
    d.parameters_begin = tokens_[open].begin;
    d.parameters_end = close < tokens_.size() ? tokens_[close].end : tokens_[open].end;
    if (close == open + 1 || (close == open + 2 && is(open + 1, "void"))) {
      d.parameter_count = 0;
      return;
    }
    std::size_t count = 1;
    for (std::size_t k = open + 1; k < close; k = opens_group(k) ? past_group(k, close) : k + 1)
      count += is(k, ",") ? 1 : 0;
    d.parameter_count = count;
  }

  /// The spelling of tokens `[first, last)` without whitespace: `APPLY_SPECIFIC(foo)`.
  std::string compact(std::size_t first, std::size_t last) const {
    std::string out;
    for (std::size_t k = first; k < last && k < tokens_.size(); ++k) out += spell(k);
    return out;
  }

  std::string_view text_;
  std::span<Token const> tokens_;
  std::vector<std::uint32_t> match_;
  std::vector<Declaration> out_;
};

}  // namespace

std::vector<std::uint32_t> match_brackets(std::string_view text, std::span<Token const> tokens) {
  std::vector<std::uint32_t> match(tokens.size());
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    match[i] = i;
    if (tokens[i].kind != TokenKind::punct || tokens[i].end - tokens[i].begin != 1) continue;
    char const c = text[tokens[i].begin];
    if (c == '(' || c == '[' || c == '{') {
      match[i] = tokens.size();
      open.push_back(i);
    } else if (c == ')' || c == ']' || c == '}') {
      char const want = c == ')' ? '(' : c == ']' ? '[' : '{';
      // A closer that does not match the innermost opener is stray; skipping it keeps this linear.
      if (open.empty() || text[tokens[open.back()].begin] != want) continue;
      match[open.back()] = i;
      match[i] = open.back();
      open.pop_back();
    }
  }
  return match;
}

std::vector<Declaration> file_scope_declarations(std::string_view text,
                                                 std::span<Token const> tokens) {
  return Reader(text, tokens).run();
}

std::string main_function_name(std::string_view func_name) {
  std::string out;
  for (char c : func_name)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

std::vector<Declaration> functions_named(std::string_view text, std::span<Token const> tokens,
                                         std::string_view name) {
  std::vector<Declaration> out;
  for (auto& decl : file_scope_declarations(text, tokens))
    if ((decl.kind == Declaration::Kind::function_definition ||
         decl.kind == Declaration::Kind::function_declaration) &&
        decl.name == name)
      out.push_back(std::move(decl));
  return out;
}

namespace {

bool is_number_type_word(std::string_view word) {
  static constexpr std::string_view words[] = {
      "bool",    "char",     "short",    "int",       "long",     "float",     "double",
      "signed",  "unsigned", "size_t",   "ptrdiff_t", "int8_t",   "int16_t",   "int32_t",
      "int64_t", "uint8_t",  "uint16_t", "uint32_t",  "uint64_t", "Py_ssize_t"};
  for (auto w : words)
    if (word == w) return true;
  return word.starts_with("npy_") || word.starts_with("DTYPE_");
}

}  // namespace

std::string WrittenParameter::name() const {
  std::string_view const written = text;
  std::size_t end = written.size();
  while (end > 0 && !is_identifier_char(written[end - 1])) --end;
  std::size_t begin = end;
  while (begin > 0 && is_identifier_char(written[begin - 1])) --begin;
  return std::string(written.substr(begin, end - begin));
}

std::vector<WrittenParameter> written_parameters(std::string_view text, Declaration const& decl) {
  std::vector<WrittenParameter> out(1);
  auto const inside = tokenize(text, decl.parameters_begin + 1, decl.parameters_end - 1);
  int depth = 0;
  for (auto const& token : inside.tokens) {
    std::string_view const spelling = text.substr(token.begin, token.end - token.begin);
    if (spelling == "(" || spelling == "[" || spelling == "{" || spelling == "<") ++depth;
    if (spelling == ")" || spelling == "]" || spelling == "}" || spelling == ">") --depth;
    if (depth == 0 && spelling == ",") {
      out.push_back({});
      continue;
    }
    out.back().pointer = out.back().pointer || spelling == "*" || spelling == "[";
    bool const qualifier = spelling == "const" || spelling == "volatile";
    if (!qualifier && !out.back().type_seen) {  // the first word of its type decides
      out.back().type_seen = true;
      out.back().number = is_number_type_word(spelling);
    }
    if (!out.back().text.empty()) out.back().text += ' ';
    out.back().text.append(spelling);
  }
  return out;
}

std::optional<std::vector<WrittenParameter>> main_function_parameters(
    SourceManager const& sm, SectionSet const& sections, std::string const& func_name) {
  std::string const wanted = main_function_name(func_name);
  for (auto const& section : sections.sections) {
    if (!may_declare_main_function(section.tag)) continue;
    for (auto const& block : section.blocks) {
      std::string_view const text = sm.file(block.body.file).text();
      auto const body = tokenize(text, block.body.begin, block.body.end);
      for (auto const& decl : functions_named(text, body.tokens, wanted)) {
        if (!decl.parameter_count) continue;
        if (*decl.parameter_count == 0) return std::vector<WrittenParameter>{};
        return written_parameters(text, decl);
      }
    }
  }
  return std::nullopt;
}

}  // namespace section::c_scan
