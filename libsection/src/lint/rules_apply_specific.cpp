// section-lint SL4xx: file-scope symbols in per-apply sections that are not made apply-specific.
#include "lint/checks.hpp"

namespace section::lint_detail {
namespace {

char const* describe(Declaration::Kind kind) {
  switch (kind) {
    case Declaration::Kind::function_definition: return "function";
    case Declaration::Kind::variable: return "global variable";
    case Declaration::Kind::type: return "type";
    case Declaration::Kind::function_declaration: return "function declaration";
  }
  return "symbol";
}

}  // namespace

void check_apply_specific(FileView const& file, std::vector<Diagnostic>& out) {
  for (auto const& block : file.blocks) {
    if (block.block.tag != "support_code_apply") continue;
    for (auto const& decl : file_scope_declarations(file.text, block.body.tokens)) {
      if (decl.kind == Declaration::Kind::function_declaration || decl.apply_specific ||
          decl.macro_built)
        continue;
      SourceRange const name{file.file, decl.name_begin, decl.name_end};
      auto d = make_diagnostic("SL401",
                               std::string(describe(decl.kind)) + " `" + decl.name +
                                   "` in `support_code_apply` is not named with `APPLY_SPECIFIC`",
                               name);
      d.notes.push_back({"each apply of the op pastes this section into the same module, so a "
                         "second apply redefines `" +
                             decl.name + "`",
                         {}});
      d.fix = FixIt{"name it `APPLY_SPECIFIC(" + decl.name + ")` and rename its uses", name,
                    "APPLY_SPECIFIC(" + decl.name + ")"};
      out.push_back(std::move(d));
    }
  }
}

}  // namespace section::lint_detail
