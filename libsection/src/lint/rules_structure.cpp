// section-lint SL2xx found by the linter: section bodies the expander cannot paste as they are.
#include "lint/checks.hpp"

namespace section::lint_detail {
namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from structure_rules().

constexpr LintRule unterminated_block_comment{
    .code = "SL207",
    .name = "unterminated-block-comment",
    .severity = Severity::error,
    .summary = "a `/*` comment is still open where the section ends",
    .documentation = R"md(## What it does
Flags a `/* ...` comment that is not closed before the next section marker (or the end of
the file).

## Why is this bad?
Marker lines are found before C comments are, so a `#section` line inside a comment still
splits the file. The comment's opening half stays in one section and its `*/` lands in
another. The expander pastes sections into different places of the module, each followed by
generated `#undef` lines, so the open comment swallows generated code and the module fails to
compile with errors far from your file.

## Example
```c
#section support_code
/* helpers
#section support_code_apply
*/
```

## Use instead
Close the comment in the section that opens it:
```c
#section support_code
/* helpers */
#section support_code_apply
```
)md",
    .reported_by = Reporter::linter,
};

}  // namespace

std::span<LintRule const* const> structure_rules() {
  static constexpr LintRule const* rules[] = {&unterminated_block_comment};
  return rules;
}

namespace {

void report_open_comments(FileView const& file, TokenizedBody const& body,
                          std::vector<Diagnostic>& out) {
  for (auto const& comment : body.comments) {
    if (comment.terminated) continue;
    auto d = make_diagnostic(unterminated_block_comment,
                             "block comment is not closed before the section ends",
                             {file.file, comment.begin, comment.begin + 2});
    d.notes.push_back({"a `#section` line inside a comment still starts a new section", {}});
    out.push_back(std::move(d));
  }
}

}  // namespace

void check_structure(FileView const& file, std::vector<Diagnostic>& out) {
  for (auto const& block : file.blocks) report_open_comments(file, block.body, out);
}

}  // namespace section::lint_detail
