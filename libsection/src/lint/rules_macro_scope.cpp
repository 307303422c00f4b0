// section-lint SL3xx: macros used in sections where the expander does not define them.
#include <optional>

#include "lint/checks.hpp"
#include "section/expand.hpp"

namespace section::lint_detail {
namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from macro_scope_rules().

constexpr LintRule fail_or_params_out_of_scope{
    .code = "SL301",
    .name = "fail-or-params-out-of-scope",
    .severity = Severity::error,
    .summary = "`FAIL` or `PARAMS` used outside `init_code_struct`, `code` and `code_cleanup`",
    .documentation = R"md(## What it does
Flags `FAIL` and `PARAMS` in sections other than `init_code_struct`, `code` and `code_cleanup`.

## Why is this bad?
The expander defines `FAIL` (jump to the op's failure handling) and `PARAMS` (the params
struct) only around those three sections, and `#undef`s them right after. Anywhere else the
names are undefined and the module fails to compile, far from your file.

Uses inside a `#define` body are not flagged: such a macro expands where it is used.

## Example
```c
#section support_code_apply
int APPLY_SPECIFIC(check)(PyArrayObject* x) {
    if (PyArray_NDIM(x) != 1) FAIL;
    return 0;
}
```

## Use instead
Return an error code and call `FAIL` from the `code` section (or let the main function's
non-zero return trigger it):
```c
#section support_code_apply
int APPLY_SPECIFIC(check)(PyArrayObject* x) {
    if (PyArray_NDIM(x) != 1) { PyErr_SetString(PyExc_ValueError, "x must be 1-d"); return 1; }
    return 0;
}
```
)md",
    .reported_by = Reporter::linter,
};

constexpr LintRule io_macro_out_of_scope{
    .code = "SL302",
    .name = "io-macro-out-of-scope",
    .severity = Severity::error,
    .summary = "`INPUT_i` or `OUTPUT_i` used outside `code` and `code_cleanup`",
    .documentation = R"md(## What it does
Flags `INPUT_<i>` and `OUTPUT_<i>` in sections other than `code` and `code_cleanup`.

## Why is this bad?
These macros name the C variables holding the apply's inputs and outputs. They exist only
while the expander pastes `code` and `code_cleanup`; elsewhere they are undefined.

## Example
```c
#section support_code_struct
int APPLY_SPECIFIC(size)() { return PyArray_SIZE(INPUT_0); }
```

## Use instead
Pass the array as an argument, from the `code` section:
```c
#section support_code_struct
int APPLY_SPECIFIC(size)(PyArrayObject* x) { return PyArray_SIZE(x); }
#section code
n = APPLY_SPECIFIC(size)(INPUT_0);
```
)md",
    .reported_by = Reporter::linter,
};

constexpr LintRule apply_macro_in_global_section{
    .code = "SL303",
    .name = "apply-macro-in-global-section",
    .severity = Severity::error,
    .summary = "`APPLY_SPECIFIC`, `DTYPE_*`, `TYPENUM_*` or `ITEMSIZE_*` used in `init_code` or "
               "`support_code`",
    .documentation = R"md(## What it does
Flags the per-apply macros (`APPLY_SPECIFIC`, `DTYPE_INPUT_i`, `DTYPE_OUTPUT_i`,
`TYPENUM_*`, `ITEMSIZE_*`, `PARAMS_TYPE`, `DTYPE_PARAM_*`) in `init_code` and `support_code`.

## Why is this bad?
`init_code` and `support_code` are shared by every application of the op, so the expander
pastes them without any macros. The names are undefined there.

## Example
```c
#section support_code
void APPLY_SPECIFIC(helper)(void) {}
```

## Use instead
Move apply-specific code to `support_code_apply` (or `init_code_apply`):
```c
#section support_code_apply
void APPLY_SPECIFIC(helper)(void) {}
```
)md",
    .reported_by = Reporter::linter,
};

constexpr LintRule redefines_generated_macro{
    .code = "SL304",
    .name = "redefines-generated-macro",
    .severity = Severity::warning,
    .summary = "a section `#define`s a macro the expander generates",
    .documentation = R"md(## What it does
Flags `#define` of a name the expander generates: `FAIL`, `PARAMS`, `INPUT_i`, `OUTPUT_i`,
`APPLY_SPECIFIC`, `DTYPE_*`/`TYPENUM_*`/`ITEMSIZE_*` of inputs and outputs, `PARAMS_TYPE`,
`DTYPE_PARAM_*`.

## Why is this bad?
The expander `#define`s these around sections and `#undef`s them after, in a fixed order.
Your definition clashes with the generated one (a redefinition warning or error), and the
generated `#undef` then removes yours too, so later code sees neither.

## Example
```c
#section support_code
#define APPLY_SPECIFIC(x) x
```

## Use instead
Pick a name of your own:
```c
#section support_code
#define MY_OP_NAME(x) my_op_##x
```
)md",
    .reported_by = Reporter::linter,
};

}  // namespace

std::span<LintRule const* const> macro_scope_rules() {
  static constexpr LintRule const* rules[] = {&fail_or_params_out_of_scope, &io_macro_out_of_scope,
                                              &apply_macro_in_global_section,
                                              &redefines_generated_macro};
  return rules;
}

namespace {

void report_out_of_scope(std::string_view name, MacroFamily family, std::string_view tag,
                         SourceRange range, std::vector<Diagnostic>& out) {
  switch (family) {
    case MacroFamily::sub:
      out.push_back(make_diagnostic(fail_or_params_out_of_scope,
                                    backquoted(name) + " is not defined in section " +
                                        backquoted(tag) + "; only " + tags_defining(family) +
                                        " have it",
                                    range));
      break;
    case MacroFamily::io:
      out.push_back(make_diagnostic(io_macro_out_of_scope,
                                    backquoted(name) + " is not defined in section " +
                                        backquoted(tag) + "; only " + tags_defining(family) +
                                        " have it",
                                    range));
      break;
    case MacroFamily::apply: {
      auto d = make_diagnostic(apply_macro_in_global_section,
                               backquoted(name) + " is not defined in section " + backquoted(tag) +
                                   ", which is shared by every apply of the op",
                               range);
      d.notes.push_back({"move this code to `" + std::string(tag) + "_apply`", {}});
      out.push_back(std::move(d));
      break;
    }
    case MacroFamily::none: break;
  }
}

/// Whether the expander defines `family` around section `tag`, from its method table.
bool in_scope(MacroFamily family, std::string_view tag) {
  ExpansionMethod const* method = expansion_method_of(tag);
  return !method || method->macros.defines(family);  // an extra tag: its macros are unknown
}

}  // namespace

void for_each_macro_use(FileView const& file, std::function<void(MacroUse const&)> const& visit) {
  for (auto const& block : file.blocks) {
    std::string_view const tag = block.block.tag;
    if (!is_section_tag(tag)) continue;  // SL201 already; its scope is unknown
    for (auto const& token : block.body.tokens) {
      if (token.kind != TokenKind::identifier) continue;
      auto const name = file.spelling(token);
      auto const macro = classify_generated_macro(name);
      if (macro.family == MacroFamily::none) continue;
      visit({name, macro, tag, file.range(token), in_scope(macro.family, tag)});
    }
  }
}

void check_macro_scope(FileView const& file, std::vector<Diagnostic>& out) {
  for_each_macro_use(file, [&](MacroUse const& use) {
    if (!use.in_scope) report_out_of_scope(use.name, use.macro.family, use.tag, use.range, out);
  });
  for (auto const& block : file.blocks) {
    if (!is_section_tag(block.block.tag)) continue;
    for (auto const& directive : block.body.directives) {
      if (directive.name != "define" || !directive.macro) continue;
      auto const name = file.spelling(*directive.macro);
      if (classify_generated_macro(name).family == MacroFamily::none) continue;
      out.push_back(make_diagnostic(redefines_generated_macro,
                                    backquoted(name) + " is generated by the expander; defining it "
                                                       "here clashes with the generated definition",
                                    file.range(*directive.macro)));
    }
  }
}

}  // namespace section::lint_detail
