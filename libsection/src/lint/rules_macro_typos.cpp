// section-lint SL305: identifiers one typo away from a macro the expander generates.
#include <string>
#include <unordered_set>

#include "lint/checks.hpp"

namespace section::lint_detail {

namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from macro_typo_rules().

constexpr LintRule misspelled_generated_macro{
    .code = "SL305",
    .name = "misspelled-generated-macro",
    .severity = Severity::warning,
    .summary = "a name one typo away from a macro the expander generates",
    .documentation = R"md(## What it does
Flags an upper-case name that is not a generated macro but is a small edit away from one:
`APPLY_SPECIFC` for `APPLY_SPECIFIC`, `PARMS` for `PARAMS`, `DTYPE_OUPUT_0` for
`DTYPE_OUTPUT_0`, `TYPENUM_INTPUT_1` for `TYPENUM_INPUT_1`. The index of an indexed macro is
kept as written. Names the file `#define`s itself are not flagged, nor are names close to two
generated macros at once.

## Why is this bad?
Nothing defines the misspelled name, so the module fails to compile. The compiler reports it
in the generated source, often as a different error (`APPLY_SPECIFC(vector_add)` makes
`vector_add` undeclared), far from the typo.

## Example
```c
#section code
if (APPLY_SPECIFC(vector_add)(INPUT_0, OUPUT_0) != 0) FAIL;
```

## Use instead
```c
#section code
if (APPLY_SPECIFIC(vector_add)(INPUT_0, OUTPUT_0) != 0) FAIL;
```

## Fix safety
The fix replaces the name with the generated one. It is a guess: if the name is a macro from
a header, suppress the finding with `// section-lint: ignore[SL305]` instead.
)md",
    .reported_by = Reporter::linter,
};

}  // namespace

std::span<LintRule const* const> macro_typo_rules() {
  static constexpr LintRule const* rules[] = {&misspelled_generated_macro};
  return rules;
}

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
      auto d = make_diagnostic(misspelled_generated_macro,
                               backquoted(name) + " is not a generated macro; did you mean " +
                                   backquoted(*intended) + "?",
                               file.range(token));
      d.fix = FixIt{"replace with " + backquoted(*intended), file.range(token), *intended};
      out.push_back(std::move(d));
    }
  }
}

}  // namespace section::lint_detail
