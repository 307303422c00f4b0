// The parser's judging pass: turns what the scan found into diagnostics, and picks among them
// the error the reference loader raises.
#include "parse/checks.hpp"

#include <algorithm>
#include <unordered_map>

#include "base/text.hpp"
#include "base/utf8.hpp"
#include "section/codes.hpp"

namespace section::detail {
namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from judging_rules().

constexpr LintRule malformed_section_marker{
    .code = "SL101",
    .name = "malformed-section-marker",
    .severity = Severity::warning,
    .summary = "a line looks like a section marker but is not one",
    .documentation = R"md(## What it does
Reports lines that look like `#section <tag>` but do not match the reference's exact syntax
`^#section [A-Za-z0-9_]+$`: indented, trailing blanks, a tab or two spaces after `#section`,
`# section`, upper case, bad tag characters, text after the tag. Also indented or trailing-blank
legacy markers.

## Why is this bad?
The reference silently reads such a line as C code of the previous section (or as stray text
before the first marker). The section you meant to start does not exist, and the C compiler
later fails on a line starting with `#section`.

## Example
```c
#section  support_code
```

## Use instead
```c
#section support_code
```
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule legacy_section_marker{
    .code = "SL102",
    .name = "legacy-section-marker",
    .severity = Severity::warning,
    .summary = "a deprecated `*_APPLY_CODE_SECTION`/`*_SUPPORT_CODE_SECTION` marker",
    .documentation = R"md(## What it does
Reports the legacy markers `THEANO_`, `AESARA_` or `PYTENSOR_` + `APPLY_CODE_SECTION` /
`SUPPORT_CODE_SECTION`.

## Why is this bad?
Each reference library recognises only its own prefix, so a file written for one fails in the
others. A repeated legacy marker *replaces* the earlier block, unlike `#section`, which
concatenates; and text before the first legacy marker is silently dropped.

## Example
```c
PYTENSOR_APPLY_CODE_SECTION
```

## Use instead
```c
#section support_code_apply
```
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule mixed_marker_styles{
    .code = "SL103",
    .name = "mixed-marker-styles",
    .severity = Severity::error,
    .summary = "legacy markers and `#section` markers in the same op",
    .documentation = R"md(## What it does
Reports a file (or set of files) using both legacy markers and `#section` markers.

## Why is this bad?
The reference raises "Both the new and the old syntax for identifying code sections are
present in the provided C code."

## Example
```c
#section support_code
int x;
PYTENSOR_APPLY_CODE_SECTION
int y;
```

## Use instead
Use `#section` markers only.
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule unknown_section_tag{
    .code = "SL201",
    .name = "unknown-section-tag",
    .severity = Severity::error,
    .summary = "a section tag that is not one of the nine",
    .documentation = R"md(## What it does
Reports `#section <tag>` lines whose tag is not one of `init_code`, `init_code_apply`,
`init_code_struct`, `support_code`, `support_code_apply`, `support_code_struct`,
`cleanup_code_struct`, `code`, `code_cleanup`, with a did-you-mean fix when one is close.

## Why is this bad?
The reference raises "Unknown section type (in file X): tag".

## Example
```c
#section suport_code
```

## Use instead
```c
#section support_code
```
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule code_before_first_section{
    .code = "SL202",
    .name = "code-before-first-section",
    .severity = Severity::error,
    .summary = "text other than whitespace before the first `#section` line",
    .documentation = R"md(## What it does
Reports the first non-whitespace text before the first marker.

## Why is this bad?
The reference raises "Stray code before first #section statement". Comments count as code
there too.

## Example
```c
// vector helpers
#section support_code
```

## Use instead
```c
#section support_code
// vector helpers
```
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule no_section_marker{
    .code = "SL203",
    .name = "no-section-marker",
    .severity = Severity::error,
    .summary = "a file without any section marker",
    .documentation = R"md(## What it does
Reports a file in which no line is a `#section` or legacy marker, and points at lines that
almost are.

## Why is this bad?
The reference raises "No valid section marker was found in file X".

## Example
A plain C file, or one whose only marker is indented.

## Use instead
Start each part of the file with `#section <tag>` in column 1.
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule no_sections{
    .code = "SL204",
    .name = "no-sections",
    .severity = Severity::error,
    .summary = "no section at all in the files of an op",
    .documentation = R"md(## What it does
Reports a run that found no section files at all (an op with `func_files = []`, or a folder
without `*.c`/`*.h` files).

## Why is this bad?
The reference raises "No sections where defined in the C files" (sic).

## Example
`section-lint src/` where `src/` holds only `*.cpp` files.

## Use instead
Give the section files.
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule empty_section{
    .code = "SL205",
    .name = "empty-section",
    .severity = Severity::info,
    .summary = "a section whose body is only whitespace",
    .documentation = R"md(## What it does
Reports a marker followed directly by the next marker (or only blank lines).

## Why is this bad?
It is harmless, but usually a leftover or a misplaced marker.

## Example
```c
#section support_code
#section support_code_apply
int APPLY_SPECIFIC(x);
```

## Use instead
Remove the empty marker.
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule repeated_section{
    .code = "SL206",
    .name = "repeated-section",
    .severity = Severity::info,
    .summary = "a tag that appears more than once",
    .documentation = R"md(## What it does
Reports the second and later blocks of the same tag in one file.

## Why is this bad?
It works: the blocks are concatenated in order (the reference's docstring wrongly says later
ones override). It is reported so that the concatenation is a visible choice.

## Example
```c
#section support_code
int a;
#section code
#section support_code
int b;
```

## Use instead
Merge the blocks, or keep them and ignore SL206.
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule code_section_with_func_name{
    .code = "SL604",
    .name = "code-section-with-func-name",
    .severity = Severity::error,
    .summary = "a `code` section together with a function name",
    .documentation = R"md(## What it does
With `--func-name`, flags a `code` section.

## Why is this bad?
An op either names a main function (`func_name`), and then the expander generates `c_code`
as a call to it, or writes `c_code` itself in a `code` section. With both, the reference
`ExternalCOp.c_code` fails with a bare `AssertionError`; the `code` section would be ignored.

## Example
```c
#section code
if (APPLY_SPECIFIC(f)(INPUT_0, &OUTPUT_0) != 0) FAIL;
```
together with `func_name = "APPLY_SPECIFIC(f)"`.

## Use instead
Keep one of the two: drop the `code` section, or drop `func_name`.
)md",
    .reported_by = Reporter::linter,
};

}  // namespace

std::span<LintRule const* const> judging_rules() {
  static constexpr LintRule const* rules[] = {&malformed_section_marker,
                                              &legacy_section_marker,
                                              &mixed_marker_styles,
                                              &unknown_section_tag,
                                              &code_before_first_section,
                                              &no_section_marker,
                                              &no_sections,
                                              &empty_section,
                                              &repeated_section,
                                              &code_section_with_func_name};
  return rules;
}

namespace {

constexpr char const* both_styles_message =
    "Both the new and the old syntax for identifying code sections are present in the provided "
    "C code. These two syntaxes should not be used at the same time.";

bool is_ascii_whitespace_only(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  });
}

std::string join_reasons(std::vector<std::string> const& why) {
  std::string out;
  for (std::size_t i = 0; i < why.size(); ++i) out += (i ? "; " : "") + why[i];
  return out;
}

Diagnostic near_miss_diagnostic(NearMiss const& m) {
  if (m.kind == MarkerKind::section) {
    auto d = make_diagnostic(
        malformed_section_marker,
        "line looks like a section marker but is not one, so it is read as C code: " +
            join_reasons(m.why),
        m.line);
    d.fix = FixIt{"write the marker exactly as `" + bounded_quote(m.marker, max_quoted_bytes) + "`",
                  m.line, m.marker};
    return d;
  }
  auto d =
      make_diagnostic(malformed_section_marker,
                      "line looks like a legacy section marker but is not one, so it is ignored: " +
                          join_reasons(m.why),
                      m.line);
  d.fix = FixIt{"write the marker alone on its line", m.line, m.marker};
  return d;
}

Diagnostic mixed_styles(SourceRange legacy_marker, SourceRange section_marker) {
  auto d = make_diagnostic(mixed_marker_styles, both_styles_message, legacy_marker);
  d.notes.push_back({"a `#section` marker is here", section_marker});
  return d;
}

// Whether `text` holds nothing but `// section-lint: ...` line comments.
bool only_lint_comments(std::string_view text) {
  while (!text.empty()) {
    auto const start = first_non_python_space(text);
    if (start == std::string_view::npos) return true;
    text.remove_prefix(start);
    auto const end = std::min(text.find('\n'), text.size());
    auto line = text.substr(0, end);
    if (!line.starts_with("//")) return false;
    line.remove_prefix(2);
    auto const word = first_non_python_space(line);
    if (word == std::string_view::npos || !line.substr(word).starts_with("section-lint:"))
      return false;
    text.remove_prefix(end);
  }
  return true;
}

class FileChecks {
 public:
  FileChecks(SourceManager const& sm, ScannedFile const& file,
             std::vector<std::string> const& extra_tags, std::vector<Diagnostic>& out)
      : file_(file), parsed_(file.parsed), path_(sm.file(parsed_.file).path()),
        text_(sm.file(parsed_.file).text()), extra_tags_(extra_tags), out_(out) {}

  void run() {
    for (auto const& m : file_.near_misses) out_.push_back(near_miss_diagnostic(m));
    if (parsed_.style == MarkerStyle::none) {
      no_marker();
      return;
    }
    if (parsed_.style == MarkerStyle::mixed) mixed_in_file();
    if (parsed_.style != MarkerStyle::legacy) check_prelude();
    check_blocks();
  }

 private:
  void no_marker() {
    auto d =
        make_diagnostic(no_section_marker, "No valid section marker was found in file " + path_,
                        {parsed_.file, 0, 0});
    for (auto const& m : file_.near_misses)
      d.notes.push_back({"this line looks like a marker but is not one", m.line});
    if (file_.near_misses.empty())
      d.notes.push_back(
          {"a section file is split by lines `#section <tag>`, e.g. `#section support_code`", {}});
    out_.push_back(std::move(d));
  }

  SourceRange first_marker(MarkerKind kind) const {
    auto const i = std::find(file_.block_kinds.begin(), file_.block_kinds.end(), kind) -
                   file_.block_kinds.begin();
    return parsed_.blocks[static_cast<std::size_t>(i)].marker;
  }

  void mixed_in_file() {
    out_.push_back(
        mixed_styles(first_marker(MarkerKind::legacy), first_marker(MarkerKind::section)));
  }

  void check_prelude() {
    auto const& prelude = parsed_.prelude;
    auto const text = std::string_view(text_).substr(prelude.begin, prelude.end - prelude.begin);
    auto const stray = first_non_python_space(text);
    if (stray == std::string_view::npos) return;
    auto line_end = text.find('\n', stray);
    if (line_end == std::string_view::npos) line_end = text.size();
    auto d = make_diagnostic(code_before_first_section,
                             "Stray code before first #section statement (in file " + path_ + ")",
                             {parsed_.file, prelude.begin + stray, prelude.begin + line_end});
    for (auto const& m : file_.near_misses)
      if (m.line.end <= prelude.end)
        d.notes.push_back({"this line looks like a marker but is not one", m.line});
    if (text.substr(stray).starts_with("\xEF\xBB\xBF")) {
      d.notes.push_back({"the file starts with a UTF-8 byte order mark; save it without one", {}});
    } else if (only_lint_comments(text.substr(stray))) {
      move_lint_comments(d, text.substr(stray), prelude.begin + stray);
    } else {
      d.notes.push_back({"only whitespace may come before the first `#section` line", {}});
    }
    out_.push_back(std::move(d));
  }

  // PyTensor rejects comments before the first marker too, so this stays an error; the comment
  // works anywhere, so moving it under the first marker keeps its meaning.
  void move_lint_comments(Diagnostic& d, std::string_view comments_text, std::size_t begin) {
    auto const prelude_end = parsed_.prelude.end;
    d.notes.push_back({"PyTensor refuses any text before the first `#section` line, comments "
                       "included; a `section-lint:` comment applies wherever it is in the file",
                       {}});
    auto marker_end = text_.find('\n', prelude_end);
    if (marker_end == std::string::npos) marker_end = text_.size();
    std::string comments(comments_text);
    while (!comments.empty() && (comments.back() == '\n' || comments.back() == ' '))
      comments.pop_back();
    d.fix = FixIt{"move the comment below the first `#section` line",
                  {parsed_.file, begin, marker_end},
                  text_.substr(prelude_end, marker_end - prelude_end) + "\n" + comments,
                  Applicability::safe};
  }

  void legacy_marker(Block const& b) {
    auto d =
        make_diagnostic(legacy_section_marker,
                        "legacy section marker; write `#section " + b.tag + "` instead", b.marker);
    d.notes.push_back({"a later legacy marker of the same kind replaces this block, while "
                       "repeated `#section` blocks are concatenated",
                       {}});
    d.fix = FixIt{"replace with `#section " + b.tag + "`", b.marker, "#section " + b.tag};
    out_.push_back(std::move(d));
  }

  void unknown_tag(Block const& b) {
    auto d = make_diagnostic(
        unknown_section_tag,
        "Unknown section type (in file " + path_ + "): " + bounded_quote(b.tag, max_quoted_bytes),
        b.tag_range);
    if (auto s = suggest_tag(b.tag)) {
      d.notes.push_back({"did you mean `" + std::string(*s) + "`?", {}});
      d.fix = FixIt{"replace with `" + std::string(*s) + "`", b.tag_range, std::string(*s)};
    } else {
      d.notes.push_back({"known tags: init_code, init_code_apply, init_code_struct, "
                         "support_code, support_code_apply, support_code_struct, "
                         "cleanup_code_struct, code, code_cleanup",
                         {}});
    }
    out_.push_back(std::move(d));
  }

  struct Occurrences {
    std::size_t count = 0;
    SourceRange first, second;
  };

  void check_blocks() {
    std::unordered_map<std::string, Occurrences> seen;
    for (std::size_t i = 0; i < parsed_.blocks.size(); ++i) {
      auto const& b = parsed_.blocks[i];
      if (file_.block_kinds[i] == MarkerKind::legacy) {
        legacy_marker(b);
      } else if (!is_section_tag(b.tag, extra_tags_)) {
        unknown_tag(b);
        continue;
      }
      auto const body = std::string_view(text_).substr(b.body.begin, b.body.end - b.body.begin);
      if (is_ascii_whitespace_only(body))
        out_.push_back(
            make_diagnostic(empty_section, "section `" + b.tag + "` is empty", b.marker));
      auto& s = seen[b.tag];
      ++s.count;
      if (s.count == 1) s.first = b.marker;
      if (s.count == 2) s.second = b.marker;
    }
    // One finding per repeated tag, not per block: files with thousands of blocks stay readable.
    for (auto const& b : parsed_.blocks) {
      auto const it = seen.find(b.tag);
      if (it == seen.end() || it->second.count < 2 || !(it->second.first == b.marker)) continue;
      auto d =
          make_diagnostic(repeated_section,
                          "section `" + b.tag + "` appears " + std::to_string(it->second.count) +
                              " times; its blocks are concatenated in order",
                          it->second.second);
      d.notes.push_back({"first `" + b.tag + "` block is here", it->second.first});
      out_.push_back(std::move(d));
    }
  }

  ScannedFile const& file_;
  ParsedFile const& parsed_;
  std::string const& path_;
  std::string const& text_;
  std::vector<std::string> const& extra_tags_;
  std::vector<Diagnostic>& out_;
};

bool uses(ScannedFile const& f, MarkerStyle style) {
  return f.parsed.style == style || f.parsed.style == MarkerStyle::mixed;
}

}  // namespace

void check_file(SourceManager const& sm, ScannedFile const& file,
                std::vector<std::string> const& extra_tags, std::vector<Diagnostic>& out) {
  FileChecks(sm, file, extra_tags, out).run();
}

void check_files(std::vector<ScannedFile> const& files, std::vector<Diagnostic>& diagnostics,
                 std::size_t judged_from) {
  auto const is_error = [](Diagnostic const& d) { return d.is_error(); };
  bool const any_error = std::any_of(diagnostics.begin() + static_cast<std::ptrdiff_t>(judged_from),
                                     diagnostics.end(), is_error);
  auto const first_using = [&](MarkerStyle style) {
    return std::find_if(files.begin(), files.end(),
                        [&](ScannedFile const& f) { return uses(f, style); });
  };
  auto const legacy = first_using(MarkerStyle::legacy), section = first_using(MarkerStyle::section);
  // Within one file, check_file reported it already.
  if (legacy != files.end() && section != files.end() && legacy != section)
    diagnostics.push_back(
        mixed_styles(legacy->parsed.blocks.front().marker, section->parsed.blocks.front().marker));
  bool const any_block = std::any_of(files.begin(), files.end(),
                                     [](ScannedFile const& f) { return !f.parsed.blocks.empty(); });
  if (!any_block && !any_error) {  // without blocks, no marker styles to mix either
    // sic: the reference's wording
    auto d = make_diagnostic(no_sections, "No sections where defined in the C files");
    d.notes.push_back({"give at least one section file", {}});
    diagnostics.push_back(std::move(d));
  }
}

Diagnostic code_section_conflict(SourceRange code_marker, std::string_view func_name) {
  auto d = make_diagnostic(code_section_with_func_name,
                           "a `code` section cannot be combined with a function name (`" +
                               std::string(func_name) + "`): remove one of them",
                           code_marker);
  d.notes.push_back({"the reference `ExternalCOp.c_code` raises `AssertionError` for this", {}});
  return d;
}

std::optional<LoadError> reference_error(SourceManager const& sm,
                                         std::vector<ScannedFile> const& files,
                                         std::span<Diagnostic const> judged) {
  // The reference checks the marker styles of all files before it splits any of them, then
  // raises on the first problem of the first file that has one: the order the checks report in.
  auto const is_error = [](Diagnostic const& d) { return d.is_error(); };
  auto first = std::find_if(judged.begin(), judged.end(), [&](Diagnostic const& d) {
    return is_error(d) && d.code == mixed_marker_styles.code;
  });
  if (first == judged.end()) first = std::find_if(judged.begin(), judged.end(), is_error);
  if (first == judged.end()) return std::nullopt;
  LoadError error{0, first->message, {}};
  if (first->code == code_before_first_section
                         .code) {  // the reference quotes the stray text itself; ours points at it
    auto const& file = *std::find_if(files.begin(), files.end(), [&](ScannedFile const& f) {
      return f.parsed.file == first->range.file;
    });
    auto const& text = sm.file(file.parsed.file).text();
    auto const prelude = std::string_view(text).substr(0, file.parsed.prelude.end);
    error.message += ": " + bounded_quote(prelude, max_quoted_bytes);
  }
  return error;
}

}  // namespace section::detail
