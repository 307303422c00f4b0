// section-lint SL2xx found by the linter: section bodies the expander cannot paste as they are.
#include "lint/checks.hpp"

namespace section::lint_detail {
namespace {

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

void check_structure(FileView const& file, std::vector<Diagnostic>& out) {
  for (auto const& block : file.blocks) report_open_comments(file, block.body, out);
}

}  // namespace section::lint_detail
