// section-lint SL9xx: suppression comments (`// section-lint: ignore[SL301]`, `ignore-file[...]`),
// and the findings about the comments themselves.
#include <algorithm>
#include <unordered_map>

#include "lint/checks.hpp"
#include "section/chars.hpp"

namespace section::lint_detail {
namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from suppression_rules().

constexpr LintRule unused_suppression{
    .code = "SL901",
    .name = "unused-suppression",
    .severity = Severity::warning,
    .summary = "a suppression comment that suppresses nothing",
    .documentation = R"md(## What it does
Reports codes in `// section-lint: ignore[...]` and `ignore-file[...]` comments that matched
no finding. Codes of rules turned off with `--select`/`--ignore` are not reported.

## Why is this bad?
A stale suppression hides the next real problem of that kind on the line (or in the file).

## Example
```c
int x = 1;  // section-lint: ignore[SL301]
```

## Use instead
Remove the comment (the fix does), or the codes that no longer apply.
)md",
    .reported_by = Reporter::linter,
};

constexpr LintRule unknown_code_in_suppression{
    .code = "SL902",
    .name = "unknown-code-in-suppression",
    .severity = Severity::warning,
    .summary = "a suppression comment names a code that is not a rule",
    .documentation = R"md(## What it does
Reports codes in suppression comments that are not rule codes (`section-lint --list-rules`).

## Why is this bad?
The comment suppresses nothing; usually the code is misspelled and the finding it was meant
to silence is still reported, or will be.

## Example
```c
FAIL;  // section-lint: ignore[SL31]
```

## Use instead
```c
FAIL;  // section-lint: ignore[SL301]
```
)md",
    .reported_by = Reporter::linter,
};

constexpr LintRule malformed_suppression{
    .code = "SL903",
    .name = "malformed-suppression",
    .severity = Severity::warning,
    .summary = "a `section-lint:` comment that is not a valid suppression",
    .documentation = R"md(## What it does
Reports comments containing `section-lint:` that do not continue with `ignore[CODE, ...]`,
`ignore-file[CODE, ...]` or `language[c]` (`language[c++]`; it checks the file as C, as
`--language c` does).

## Why is this bad?
The comment was meant to suppress something and does not.

## Example
```c
// section-lint: ignore SL301
// section-lint: noqa[SL301]
```

## Use instead
```c
// section-lint: ignore[SL301]
```
A comment `ignore[...]` applies to findings starting on its line; `ignore-file[...]` to the
whole file, wherever it is.
`// section-lint: language[c]`, anywhere in the file, checks it as C (SL208, SL209) whatever
`--language` says; `language[c++]` as C++.
)md",
    .reported_by = Reporter::linter,
};

}  // namespace

std::span<LintRule const* const> suppression_rules() {
  static constexpr LintRule const* rules[] = {&unused_suppression, &unknown_code_in_suppression,
                                              &malformed_suppression};
  return rules;
}

namespace {

constexpr std::string_view directive_prefix = "section-lint:";

struct SuppressedCode {
  std::string code;
  std::size_t begin;
  std::size_t end;
  bool used = false;
};

struct Suppression {
  bool file_wide;
  std::size_t line;  ///< the comment's first line
  std::size_t comment_begin;
  std::size_t comment_end;
  std::size_t list_begin;  ///< the `[`
  std::size_t list_end;    ///< past the `]`
  std::vector<SuppressedCode> codes;
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_separator(char c) { return is_blank(c) || c == ','; }
bool is_code_char(char c) { return is_identifier_char(c) || c == '-'; }

/// The language a `section-lint: language[c]` (or `[c++]`) comment declares, if `comment` is
/// one.
std::optional<Language> language_in(std::string_view comment) {
  auto const at = comment.find(directive_prefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = comment.substr(at + directive_prefix.size());
  while (!rest.empty() && is_blank(rest.front())) rest.remove_prefix(1);
  for (Language const language : {Language::c, Language::cxx}) {
    std::string const directive = "language[" + std::string(language_name(language)) + "]";
    if (rest.starts_with(directive)) return language;
  }
  return std::nullopt;
}

class SuppressionReader {
 public:
  SuppressionReader(SourceManager const& sm, FileView const& file, std::vector<Diagnostic>& meta)
      : sm_(sm), file_(file), meta_(meta) {}

  std::vector<Suppression> read() {
    read_comments(file_.prelude);
    for (auto const& block : file_.blocks) read_comments(block.body);
    return std::move(found_);
  }

 private:
  void read_comments(TokenizedBody const& body) {
    for (auto const& c : body.comments) read_comment(c);
  }

  /// A `section-lint: ignore[...]` or `ignore-file[...]` directive anywhere in the comment.
  void read_comment(Comment const& c) {
    auto const at = file_.text.substr(c.begin, c.end - c.begin).find(directive_prefix);
    if (at == std::string_view::npos) return;
    std::size_t const word_begin = skip(c.begin + at + directive_prefix.size(), c.end, is_blank);
    std::size_t const word_end = skip(word_begin, c.end, is_code_char);
    std::string_view const word = file_.text.substr(word_begin, word_end - word_begin);
    std::size_t const open = skip(word_end, c.end, is_blank);
    if (word == "language") {  // read by declared_language
      if (!language_in(file_.text.substr(c.begin, c.end - c.begin)))
        malformed(c, "expected `language[c]` or `language[c++]` after `section-lint:`");
      return;
    }
    if ((word != "ignore" && word != "ignore-file") || open >= c.end || file_.text[open] != '[') {
      malformed(c,
                "expected `ignore[CODE, ...]` or `ignore-file[CODE, ...]` after `section-lint:`");
      return;
    }
    Suppression s{word == "ignore-file",
                  sm_.line_column(file_.file, c.begin).line,
                  c.begin,
                  c.end,
                  open,
                  open,
                  {}};
    if (read_code_list(c, s)) found_.push_back(std::move(s));
  }

  /// Reads the list `[CODE, ...]` opening at `s.list_begin` into `s`; false, with the reason
  /// reported, when the list is malformed.
  bool read_code_list(Comment const& c, Suppression& s) {
    std::size_t pos = s.list_begin + 1;
    bool listed_any = false;
    while (true) {
      pos = skip(pos, c.end, is_separator);
      if (pos >= c.end) {
        malformed(c, "the code list is not closed with `]`");
        return false;
      }
      if (file_.text[pos] == ']') break;
      std::size_t const code_end = skip(pos, c.end, is_code_char);
      if (code_end == pos) {
        malformed(c, "expected a rule code such as `SL301` in the list");
        return false;
      }
      listed_any = true;
      add_code(s, pos, code_end);
      pos = code_end;
    }
    s.list_end = pos + 1;
    if (!listed_any) malformed(c, "the code list is empty; name the codes to ignore");
    return listed_any;
  }

  /// A listed code is kept when it names a rule, else reported.
  void add_code(Suppression& s, std::size_t begin, std::size_t end) {
    std::string code(file_.text.substr(begin, end - begin));
    if (!find_lint_rule(code)) {
      meta_.push_back(make_diagnostic(unknown_code_in_suppression,
                                      "`" + code + "` is not a section-lint rule code",
                                      {file_.file, begin, end}));
      return;
    }
    s.codes.push_back({std::move(code), begin, end});
  }

  /// Past the run of characters `in_run` accepts from `pos`, stopping at `end`.
  std::size_t skip(std::size_t pos, std::size_t end, bool (*in_run)(char)) const {
    while (pos < end && in_run(file_.text[pos])) ++pos;
    return pos;
  }

  void malformed(Comment const& c, std::string const& why) {
    meta_.push_back(make_diagnostic(malformed_suppression, "malformed suppression comment: " + why,
                                    {file_.file, c.begin, c.end}));
  }

  SourceManager const& sm_;
  FileView const& file_;
  std::vector<Diagnostic>& meta_;
  std::vector<Suppression> found_;
};

/// Removes the diagnostics of `file` that a suppression covers, marking the codes used.
void suppress(SourceManager const& sm, FileId file, std::vector<Suppression>& suppressions,
              std::vector<Diagnostic>& diagnostics) {
  if (suppressions.empty()) return;
  // Indexed by line so that many suppressions and many findings stay linear.
  std::vector<Suppression*> file_wide;
  std::unordered_multimap<std::size_t, Suppression*> by_line;
  for (auto& s : suppressions) {
    if (s.file_wide) file_wide.push_back(&s);
    else by_line.emplace(s.line, &s);
  }
  auto const mark_used = [](Suppression& s, std::string const& code) {
    for (auto& c : s.codes) {
      if (c.code == code) {
        c.used = true;
        return true;
      }
    }
    return false;
  };
  auto const covers = [&](Diagnostic const& d) {
    if (d.range.file != file) return false;
    for (auto* s : file_wide)
      if (mark_used(*s, d.code)) return true;
    auto const [first, last] = by_line.equal_range(sm.line_column(file, d.range.begin).line);
    for (auto it = first; it != last; ++it)
      if (mark_used(*it->second, d.code)) return true;
    return false;
  };
  std::erase_if(diagnostics, covers);
}

bool is_meta_code(std::string_view code) { return code.starts_with("SL9"); }

/// SL901 for every code (of the given kind) that suppressed nothing.
void report_unused(std::vector<Suppression> const& suppressions, FileView const& file,
                   RuleSelection const& selection, bool meta_codes, std::vector<Diagnostic>& out) {
  for (auto const& s : suppressions) {
    bool const none_used = std::none_of(s.codes.begin(), s.codes.end(),
                                        [](SuppressedCode const& c) { return c.used; });
    std::string kept;
    for (auto const& c : s.codes)
      if (c.used) kept += (kept.empty() ? "" : ", ") + c.code;
    for (auto const& c : s.codes) {
      if (c.used || is_meta_code(c.code) != meta_codes || !selection.enabled(c.code)) continue;
      auto d = make_diagnostic(unused_suppression,
                               "unused suppression of `" + c.code + "`: no such finding " +
                                   (s.file_wide ? "in this file" : "on this line"),
                               {file.file, c.begin, c.end});
      if (none_used) {
        d.fix = FixIt{"remove the suppression comment",
                      {file.file, s.comment_begin, s.comment_end},
                      "",
                      Applicability::safe};
      } else {
        d.fix = FixIt{"keep only the codes in use",
                      {file.file, s.list_begin, s.list_end},
                      "[" + kept + "]",
                      Applicability::safe};
      }
      out.push_back(std::move(d));
    }
  }
}

}  // namespace

void apply_suppressions(SourceManager const& sm, FileView const& file,
                        RuleSelection const& selection, std::vector<Diagnostic>& diagnostics) {
  std::vector<Diagnostic> meta;
  auto suppressions = SuppressionReader(sm, file, meta).read();
  suppress(sm, file.file, suppressions, diagnostics);
  report_unused(suppressions, file, selection, false, meta);
  std::erase_if(meta, [&](Diagnostic const& d) { return !selection.enabled(d.code); });
  // Findings about suppressions can be suppressed too, e.g. `ignore-file[SL901]`.
  suppress(sm, file.file, suppressions, meta);
  report_unused(suppressions, file, selection, true, meta);
  std::erase_if(meta, [&](Diagnostic const& d) { return !selection.enabled(d.code); });
  diagnostics.insert(diagnostics.end(), std::make_move_iterator(meta.begin()),
                     std::make_move_iterator(meta.end()));
}

std::optional<Language> declared_language(FileView const& file) {
  auto const in = [&](TokenizedBody const& body) -> std::optional<Language> {
    for (auto const& c : body.comments)
      if (auto language = language_in(file.text.substr(c.begin, c.end - c.begin))) return language;
    return std::nullopt;
  };
  if (auto language = in(file.prelude)) return language;
  for (auto const& block : file.blocks)
    if (auto language = in(block.body)) return language;
  return std::nullopt;
}

}  // namespace section::lint_detail
