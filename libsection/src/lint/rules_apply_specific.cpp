// section-lint SL4xx: file-scope symbols in per-apply sections that are not made apply-specific.
#include "lint/checks.hpp"

namespace section::lint_detail {
namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from apply_specific_rules().

constexpr LintRule missing_apply_specific{
    .code = "SL401",
    .name = "missing-apply-specific",
    .severity = Severity::warning,
    .summary =
        "a function, global or type defined in `support_code_apply` without `APPLY_SPECIFIC`",
    .documentation = R"md(## What it does
Flags functions, global variables and struct/union/enum/class types defined at file scope in
`support_code_apply` whose name is not built with `APPLY_SPECIFIC(...)`.

## Why is this bad?
`support_code_apply` is pasted into the module once per application of the op. All copies
land in one translation unit, so when the op is applied twice in one graph the second copy
redefines the symbol and the module fails to compile. `static` does not help: both copies
are in the same file. `APPLY_SPECIFIC(name)` appends the apply's unique node name.

Declarations without a definition (`int f(int);`, `extern int x;`) and plain typedefs are
fine: C and C++ allow repeating them.

## Example
```c
#section support_code_apply
static int scale(double* x, npy_intp n) { /* ... */ return 0; }
```

## Use instead
```c
#section support_code_apply
static int APPLY_SPECIFIC(scale)(double* x, npy_intp n) { /* ... */ return 0; }
```
and call it as `APPLY_SPECIFIC(scale)(...)`. Code that does not depend on the apply can move
to `support_code`, which is pasted once.

## Fix safety
The fix renames the definition only; uses of the name must be renamed too.
)md",
    .reported_by = Reporter::linter,
};

}  // namespace

std::span<LintRule const* const> apply_specific_rules() {
  static constexpr LintRule const* rules[] = {&missing_apply_specific};
  return rules;
}

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
      auto d = make_diagnostic(missing_apply_specific,
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
