// section-lint SL6xx: checks that need the op's signature
// (--inputs/--outputs/--params/--func-name).
#include <algorithm>

#include "lint/checks.hpp"
#include "parse/checks.hpp"

namespace section::lint_detail {
namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from signature_rules().

constexpr LintRule io_index_beyond_arity{
    .code = "SL601",
    .name = "io-index-beyond-arity",
    .severity = Severity::error,
    .summary = "`INPUT_k`, `OUTPUT_k` or their `DTYPE_`/`TYPENUM_`/`ITEMSIZE_` macros beyond the "
               "op's arity",
    .documentation = R"md(## What it does
With `--inputs`/`--outputs`, flags `INPUT_k`, `DTYPE_INPUT_k`, `TYPENUM_INPUT_k`,
`ITEMSIZE_INPUT_k` (and the `OUTPUT` forms) whose index `k` is not below the number of inputs
(outputs) of the op.

## Why is this bad?
The expander defines these macros for indices `0 … n-1` only. A larger index is undefined and
fails to compile, or silently picks up a macro from elsewhere.

## Example
With `--inputs float64[:],float64[:]`:
```c
#section code
double* z = (double*)PyArray_DATA(INPUT_2);
```

## Use instead
Indices count from 0:
```c
#section code
double* y = (double*)PyArray_DATA(INPUT_1);
```
)md",
    .reported_by = Reporter::linter,
};

constexpr LintRule main_function_missing{
    .code = "SL602",
    .name = "main-function-missing",
    .severity = Severity::warning,
    .summary = "`--func-name` names a function no support section declares",
    .documentation = R"md(## What it does
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
    .reported_by = Reporter::linter,
};

constexpr LintRule main_function_arity{
    .code = "SL603",
    .name = "main-function-arity",
    .severity = Severity::error,
    .summary = "the main function's parameter count is not inputs + outputs (+ params)",
    .documentation = R"md(## What it does
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
    .reported_by = Reporter::linter,
};

}  // namespace

std::span<LintRule const* const> signature_rules() {
  static constexpr LintRule const* rules[] = {&io_index_beyond_arity, &main_function_missing,
                                              &main_function_arity};
  return rules;
}

namespace {

void check_arity(std::string_view name, GeneratedMacro const& m, OpDescription const& op,
                 SourceRange range, std::vector<Diagnostic>& out) {
  auto const count = arity(m.is_input ? op.inputs : op.outputs);
  if (!m.index || !count || *m.index < *count) return;
  std::string const what = m.is_input ? "input" : "output";
  std::string message = "`" + std::string(name) + "` refers to " + what + " " +
                        std::to_string(*m.index) + " but the op has " + std::to_string(*count) +
                        " " + what + (*count == 1 ? "" : "s");
  auto d = make_diagnostic(io_index_beyond_arity, std::move(message), range);
  if (*count > 0)
    d.notes.push_back({what + " indices run from 0 to " + std::to_string(*count - 1), {}});
  out.push_back(std::move(d));
}

}  // namespace

void check_io_arity(FileView const& file, OpDescription const& op, std::vector<Diagnostic>& out) {
  for_each_macro_use(file, [&](MacroUse const& use) {  // uses out of scope are SL30x
    if (use.in_scope) check_arity(use.name, use.macro, op, use.range, out);
  });
}

void check_signature(std::span<FileView const> files, OpDescription const& op,
                     std::vector<Diagnostic>& out) {
  if (!op.func_name) return;
  std::string const func_name = c_scan::main_function_name(*op.func_name);
  auto const inputs = arity(op.inputs), outputs = arity(op.outputs);
  std::optional<std::size_t> expected;
  if (inputs && outputs) expected = *inputs + *outputs + (op.has_params ? 1 : 0);

  bool found = false;
  for (auto const& file : files) {
    for (auto const& block : file.blocks) {
      if (block.block.tag == "code") {
        out.push_back(detail::code_section_conflict(block.block.marker, *op.func_name));
      }
      if (!may_declare_main_function(block.block.tag)) continue;
      for (auto const& decl : c_scan::functions_named(file.text, block.body.tokens, func_name)) {
        found = true;
        if (!expected || !decl.parameter_count || *decl.parameter_count == *expected) continue;
        std::string message = "`" + decl.name + "` takes " + std::to_string(*decl.parameter_count) +
                              " parameters but the op calls it with " + std::to_string(*expected);
        auto d = make_diagnostic(main_function_arity, std::move(message),
                                 {file.file, decl.parameters_begin, decl.parameters_end});
        d.notes.push_back({std::to_string(*inputs) + " inputs, " + std::to_string(*outputs) +
                               " outputs" + (op.has_params ? ", 1 params struct" : ""),
                           {}});
        out.push_back(std::move(d));
      }
    }
  }
  if (!found) {
    SourceRange where = files.empty() ? SourceRange{} : SourceRange{files.front().file, 0, 0};
    out.push_back(make_diagnostic(main_function_missing,
                                  "no section declares the main function `" + *op.func_name + "`",
                                  where));
  }
}

}  // namespace section::lint_detail
