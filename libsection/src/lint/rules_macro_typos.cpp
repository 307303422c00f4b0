// section-lint SL305: identifiers one typo away from a macro the expander generates.
#include <string>
#include <unordered_set>

#include "lint/checks.hpp"

namespace section::lint_detail {

void check_macro_typos(FileView const& file, std::vector<Diagnostic>& out) {
  // A name the file `#define`s anywhere is the user's own macro, however close it is.
  std::unordered_set<std::string_view> defined;
  auto const collect = [&](TokenizedBody const& body) {
    for (auto const& directive : body.directives)
      if (directive.name == "define" && directive.macro)
        defined.insert(file.spelling(*directive.macro));
  };
  collect(file.prelude);
  for (auto const& block : file.blocks) collect(block.body);

  for (auto const& block : file.blocks) {
    if (!is_section_tag(block.block.tag)) continue;  // SL201 already
    for (auto const& token : block.body.tokens) {
      if (token.kind != TokenKind::identifier) continue;
      auto const name = file.spelling(token);
      if (defined.contains(name)) continue;
      auto const intended = intended_generated_macro(name);
      if (!intended) continue;
      auto d = make_diagnostic("SL305",
                               backquoted(name) + " is not a generated macro; did you mean " +
                                   backquoted(*intended) + "?",
                               file.range(token));
      d.fix = FixIt{"replace with " + backquoted(*intended), file.range(token), *intended};
      out.push_back(std::move(d));
    }
  }
}

}  // namespace section::lint_detail
