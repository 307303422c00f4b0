// section-lint SL2xx found by the linter: section bodies the expander cannot paste as they are.
#include "lint/checks.hpp"

namespace section::lint_detail {
namespace {

constexpr LintRule rules[] = {
    {"SL207", "unterminated-block-comment", Severity::error,
     "a `/*` comment is still open where the section ends",
     R"md(## What it does
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
     false},
};

void report_open_comments(FileView const& file, TokenizedBody const& body,
                          std::vector<Diagnostic>& out) {
  for (auto const& comment : body.comments) {
    if (comment.terminated) continue;
    auto d = make_diagnostic("SL207", "block comment is not closed before the section ends",
                             {file.file, comment.begin, comment.begin + 2});
    d.notes.push_back({"a `#section` line inside a comment still starts a new section", {}});
    out.push_back(std::move(d));
  }
}

}  // namespace

std::span<LintRule const> structure_rules() { return rules; }

void check_structure(FileView const& file, std::vector<Diagnostic>& out) {
  for (auto const& block : file.blocks) report_open_comments(file, block.body, out);
}

}  // namespace section::lint_detail
