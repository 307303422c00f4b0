// section-lint SL5xx: leaving the `code` section by `return` or `goto` instead of `FAIL`.
#include <algorithm>
#include <array>
#include <unordered_set>

#include "lint/checks.hpp"

namespace section::lint_detail {
namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from control_flow_rules().

constexpr LintRule return_in_code{
    .code = "SL501",
    .name = "return-in-code",
    .severity = Severity::error,
    .summary = "`return` in a `code` section; use `FAIL`",
    .documentation = R"md(## What it does
Flags `return` statements in a `code` section (outside lambdas and local class members).

## Why is this bad?
The expander pastes `code` into the body of the module's generated `run()` function, inside
nested blocks whose cleanup code releases the inputs and outputs and reports errors. A
`return` leaves `run()` directly: the cleanup never runs (leaking references), outputs are
not stored, and an error set with `PyErr_SetString` is not reported as the op's failure.
`FAIL` sets the failure code and jumps to the cleanup.

## Example
```c
#section code
if (PyArray_NDIM(INPUT_0) != 1) {
    PyErr_SetString(PyExc_ValueError, "x must be 1-d");
    return 1;
}
```

## Use instead
```c
#section code
if (PyArray_NDIM(INPUT_0) != 1) {
    PyErr_SetString(PyExc_ValueError, "x must be 1-d");
    FAIL;
}
```
)md",
    .reported_by = Reporter::linter,
};

constexpr LintRule goto_out_of_code{
    .code = "SL502",
    .name = "goto-out-of-code",
    .severity = Severity::error,
    .summary = "`goto` to a label the `code` section does not define",
    .documentation = R"md(## What it does
Flags `goto label` in a `code` section when no block of the file's `code` section defines
`label`.

## Why is this bad?
The target is either missing (a compile error in the generated module) or a label of the
generated code such as `__label_7`, whose number changes with the graph. Jumping there skips
the failure bookkeeping `FAIL` does.

## Example
```c
#section code
if (!ok) goto __label_7;
```

## Use instead
```c
#section code
if (!ok) FAIL;
```
)md",
    .reported_by = Reporter::linter,
};

}  // namespace

std::span<LintRule const* const> control_flow_rules() {
  static constexpr LintRule const* rules[] = {&return_in_code, &goto_out_of_code};
  return rules;
}

namespace {

bool is_label_keyword(std::string_view word) {
  return word == "default" || word == "public" || word == "private" || word == "protected" ||
         word == "case";
}

enum class Brace { block, function_body, class_body };

class CodeWalker {
 public:
  CodeWalker(FileView const& file, std::vector<Token> tokens)
      : file_(file), tokens_(std::move(tokens)), match_(match_brackets(file.text, tokens_)) {}

  void run(std::vector<Diagnostic>& out) {
    collect_labels();
    std::vector<Brace> braces;
    std::size_t nested_functions = 0;
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      if (is(i, "{")) {
        braces.push_back(kind_of_brace(i, braces));
        if (braces.back() != Brace::block) ++nested_functions;
      } else if (is(i, "}")) {
        if (braces.empty()) continue;
        if (braces.back() != Brace::block) --nested_functions;
        braces.pop_back();
      } else if (nested_functions == 0 && is(i, "return")) {
        auto d = make_diagnostic(return_in_code,
                                 "`return` in section `code` leaves the generated function "
                                 "without its cleanup; use `FAIL` to report an error",
                                 file_.range(tokens_[i]));
        d.notes.push_back(
            {"set a Python exception first, e.g. with `PyErr_SetString`, then `FAIL`", {}});
        out.push_back(std::move(d));
      } else if (nested_functions == 0 && is(i, "goto") && i + 1 < tokens_.size() &&
                 tokens_[i + 1].kind == TokenKind::identifier && !labels_.contains(spell(i + 1))) {
        out.push_back(make_diagnostic(goto_out_of_code,
                                      "`goto " + std::string(spell(i + 1)) +
                                          "` jumps to a label the `code` section does not "
                                          "define; use `FAIL` to leave it",
                                      {file_.file, tokens_[i].begin, tokens_[i + 1].end}));
      }
    }
  }

 private:
  std::string_view spell(std::size_t i) const { return file_.spelling(tokens_[i]); }
  bool is(std::size_t i, std::string_view s) const { return i < tokens_.size() && spell(i) == s; }

  /// `name:` at the start of a statement.
  void collect_labels() {
    for (std::size_t i = 0; i + 1 < tokens_.size(); ++i) {
      if (tokens_[i].kind != TokenKind::identifier || !is(i + 1, ":") || is_label_keyword(spell(i)))
        continue;
      if (i == 0 || is(i - 1, ";") || is(i - 1, "{") || is(i - 1, "}") || is(i - 1, ":"))
        labels_.insert(spell(i));
    }
  }

  /// Whether the `{` at `open` starts a lambda or local member function body (whose `return`s
  /// are their own), a local class body, or a plain block. Looks back a bounded distance.
  Brace kind_of_brace(std::size_t open, std::vector<Brace> const& enclosing) const {
    if (ends_function_head(skip_specifiers_back(open), enclosing)) return Brace::function_body;
    if (follows_class_key(open)) return Brace::class_body;
    return Brace::block;
  }

  static constexpr std::size_t look_back = 16;

  /// The start of the specifiers and trailing return type before `open` (`mutable`, `noexcept`,
  /// `-> std::vector<int>`): the head proper ends just before it.
  std::size_t skip_specifiers_back(std::size_t open) const {
    std::size_t k = open;
    while (k > 0 && open - k < look_back && is_specifier_token(k - 1)) --k;
    return k;
  }

  bool is_specifier_token(std::size_t i) const {
    static constexpr std::array<std::string_view, 7> type_punctuation = {"->", "::", "*", "&",
                                                                         "<",  ">",  ","};
    return tokens_[i].kind == TokenKind::identifier ||
           std::find(type_punctuation.begin(), type_punctuation.end(), spell(i)) !=
               type_punctuation.end();
  }

  /// Whether the head ending at `end` is a function's: a lambda's captures `[&] {`, its
  /// parameters `[&](int x) {`, or `f() {` right inside a class body.
  bool ends_function_head(std::size_t end, std::vector<Brace> const& enclosing) const {
    if (end == 0) return false;
    if (is(end - 1, "]")) return true;
    if (!is(end - 1, ")")) return false;
    std::size_t const paren = match_[end - 1];
    if (paren < end - 1 && paren > 0 && is(paren - 1, "]")) return true;
    return !enclosing.empty() && enclosing.back() == Brace::class_body;
  }

  /// Whether `struct`, `class` or `union` comes before `open` in the same statement.
  bool follows_class_key(std::size_t open) const {
    for (std::size_t j = open; j > 0 && open - j < look_back; --j) {
      auto const s = spell(j - 1);
      if (s == ";" || s == "{" || s == "}" || s == ")") return false;
      if (s == "struct" || s == "class" || s == "union") return true;
    }
    return false;
  }

  FileView const& file_;
  std::vector<Token> tokens_;
  std::vector<std::uint32_t> match_;
  std::unordered_set<std::string_view> labels_;
};

}  // namespace

void check_control_flow(FileView const& file, std::vector<Diagnostic>& out) {
  // A file's `code` blocks are concatenated into one section: labels are shared between them.
  std::vector<Token> tokens;
  for (auto const& block : file.blocks) {
    if (block.block.tag == "code")
      tokens.insert(tokens.end(), block.body.tokens.begin(), block.body.tokens.end());
  }
  if (!tokens.empty()) CodeWalker(file, std::move(tokens)).run(out);
}

}  // namespace section::lint_detail
