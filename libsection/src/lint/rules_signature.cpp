// section-lint SL6xx: checks that need the op's signature (--inputs/--outputs/--params/--func-name).
// SL601 (macro indices beyond the arity) lives with the macro-scope rules, which find those macros.
#include <algorithm>
#include <cctype>

#include "lint/checks.hpp"

namespace section::lint_detail {
namespace {

constexpr LintRule rules[] = {
    {"SL602", "main-function-missing", Severity::warning,
     "`--func-name` names a function no support section declares",
     R"md(## What it does
With `--func-name`, looks for a declaration or definition of that function (written the same
way, e.g. `APPLY_SPECIFIC(vector_times_vector)`) in the `support_code`, `support_code_apply`
and `support_code_struct` sections of all the files given, and reports when there is none.

## Why is this bad?
The expander's `c_code` calls the function by that name. If no section declares it, the
module fails to compile (or links against something unexpected).

## Example
With `--func-name "APPLY_SPECIFIC(vector_times_vector)"`:
```c
#section support_code_apply
int APPLY_SPECIFIC(vector_times)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) { ... }
```

## Use instead
Name the function exactly as `func_name` does:
```c
#section support_code_apply
int APPLY_SPECIFIC(vector_times_vector)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) { ... }
```
A function declared in a header the sections include cannot be seen; suppress the finding
with `// section-lint: ignore-file[SL602]` then.
)md",
     false},
    {"SL603", "main-function-arity", Severity::error,
     "the main function's parameter count is not inputs + outputs (+ params)",
     R"md(## What it does
With `--func-name`, `--inputs` and `--outputs`, checks that the main function takes one
parameter per input, one per output, and one more for the params struct when `--params` is
given.

## Why is this bad?
The generated call is `func_name(in_0, ..., &out_0, ..., params)`. A different parameter
count is a compile error in the generated module, reported against generated code.

## Example
With `--inputs float64[:],float64[:] --outputs float64[:]`:
```c
#section support_code_apply
int APPLY_SPECIFIC(vector_times_vector)(PyArrayObject* x, PyArrayObject** z) { ... }
```

## Use instead
```c
#section support_code_apply
int APPLY_SPECIFIC(vector_times_vector)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z) { ... }
```
)md",
     false},
    {"SL604", "code-section-with-func-name", Severity::error,
     "a `code` section together with a function name",
     R"md(## What it does
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
     false},
};

std::string without_blanks(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

bool may_declare_main_function(std::string_view tag) {
  // support_code_struct counts: `run()` is a member of the struct those members belong to.
  return tag == "support_code" || tag == "support_code_apply" || tag == "support_code_struct";
}

}  // namespace

std::span<LintRule const> signature_rules() { return rules; }

void check_signature(std::span<FileView const> files, OpDescription const& op,
                     std::vector<Diagnostic>& out) {
  if (!op.func_name) return;
  std::string const func_name = without_blanks(*op.func_name);
  auto const inputs = arity(op.inputs), outputs = arity(op.outputs);
  std::optional<std::size_t> expected;
  if (inputs && outputs) expected = *inputs + *outputs + (op.has_params ? 1 : 0);

  bool found = false;
  for (auto const& file : files) {
    for (auto const& block : file.blocks) {
      if (block.block.tag == "code") {
        auto d = make_diagnostic("SL604",
                                 "section `code` is ignored because the op calls `" +
                                     *op.func_name + "` instead",
                                 block.block.marker);
        d.notes.push_back({"the reference `ExternalCOp.c_code` raises `AssertionError` for this", {}});
        out.push_back(std::move(d));
      }
      if (!may_declare_main_function(block.block.tag)) continue;
      for (auto const& decl : file_scope_declarations(file.text, block.body.tokens)) {
        bool const is_function = decl.kind == Declaration::Kind::function_definition ||
                                 decl.kind == Declaration::Kind::function_declaration;
        if (!is_function || decl.name != func_name) continue;
        found = true;
        if (!expected || !decl.parameter_count || *decl.parameter_count == *expected) continue;
        std::string message = "`" + decl.name + "` takes " + std::to_string(*decl.parameter_count) +
                              " parameters but the op calls it with " + std::to_string(*expected);
        auto d = make_diagnostic("SL603", std::move(message),
                                 {file.file, decl.parameters_begin, decl.parameters_end});
        d.notes.push_back({std::to_string(*inputs) + " inputs, " +
                               std::to_string(*outputs) + " outputs" +
                               (op.has_params ? ", 1 params struct" : ""),
                           {}});
        out.push_back(std::move(d));
      }
    }
  }
  if (!found) {
    SourceRange where = files.empty() ? SourceRange{} : SourceRange{files.front().file, 0, 0};
    out.push_back(make_diagnostic("SL602",
                                  "no section declares the main function `" +
                                      *op.func_name + "`",
                                  where));
  }
}

}  // namespace section::lint_detail
