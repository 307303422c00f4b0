// section-lint SL3xx: macros used in sections where the expander does not define them, and
// SL601: input/output macros beyond the op's arity.
#include <charconv>
#include <optional>

#include "lint/checks.hpp"
#include "section/expand.hpp"

namespace section::lint_detail {
namespace {

constexpr LintRule rules[] = {
    {"SL301", "fail-or-params-out-of-scope", Severity::error,
     "`FAIL` or `PARAMS` used outside `init_code_struct`, `code` and `code_cleanup`",
     R"md(## What it does
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
     false},
    {"SL302", "io-macro-out-of-scope", Severity::error,
     "`INPUT_i` or `OUTPUT_i` used outside `code` and `code_cleanup`",
     R"md(## What it does
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
     false},
    {"SL303", "apply-macro-in-global-section", Severity::error,
     "`APPLY_SPECIFIC`, `DTYPE_*`, `TYPENUM_*` or `ITEMSIZE_*` used in `init_code` or `support_code`",
     R"md(## What it does
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
     false},
    {"SL304", "redefines-generated-macro", Severity::warning,
     "a section `#define`s a macro the expander generates",
     R"md(## What it does
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
     false},
    {"SL601", "io-index-beyond-arity", Severity::error,
     "`INPUT_k`, `OUTPUT_k` or their `DTYPE_`/`TYPENUM_`/`ITEMSIZE_` macros beyond the op's arity",
     R"md(## What it does
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
     false},
};

enum class MacroFamily { none, sub, io, apply };

struct GeneratedMacro {
  MacroFamily family = MacroFamily::none;
  bool is_input = false;             ///< for indexed macros: input (else output)
  std::optional<std::size_t> index;  ///< `k` of `INPUT_k`, `DTYPE_OUTPUT_k`, ...
};

std::optional<std::size_t> parse_index(std::string_view digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  std::size_t value = 0;
  auto const [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

/// `INPUT_3` → input 3; `OUTPUT_0` → output 0.
std::optional<std::pair<bool, std::size_t>> io_index(std::string_view name) {
  for (auto [prefix, input] : {std::pair{std::string_view("INPUT_"), true},
                               std::pair{std::string_view("OUTPUT_"), false}}) {
    if (name.starts_with(prefix)) {
      if (auto k = parse_index(name.substr(prefix.size()))) return std::pair{input, *k};
    }
  }
  return std::nullopt;
}

GeneratedMacro classify(std::string_view name) {
  if (name == "FAIL" || name == "PARAMS") return {MacroFamily::sub, false, std::nullopt};
  if (auto io = io_index(name)) return {.family = MacroFamily::io, .is_input = io->first, .index = io->second};
  if (name == "APPLY_SPECIFIC" || name == "PARAMS_TYPE") return {MacroFamily::apply, false, std::nullopt};
  if (name.starts_with("DTYPE_PARAM_") && name.size() > 12) return {MacroFamily::apply, false, std::nullopt};
  for (std::string_view prefix : {"DTYPE_", "TYPENUM_", "ITEMSIZE_"}) {
    if (name.starts_with(prefix)) {
      if (auto io = io_index(name.substr(prefix.size())))
        return {.family = MacroFamily::apply, .is_input = io->first, .index = io->second};
    }
  }
  return {};
}

/// Whether the expander defines `family` around section `tag`, from its method table.
bool in_scope(MacroFamily family, std::string_view tag) {
  ExpansionMethod const* method = expansion_method_of(tag);
  if (!method) return true;  // an extra tag: pasted by its own op class, macros unknown
  switch (family) {
    case MacroFamily::sub: return method->macros.sub;
    case MacroFamily::io: return method->macros.io;
    case MacroFamily::apply: return method->macros.apply;
    case MacroFamily::none: return true;
  }
  return true;
}

/// The tags whose text sees `family`, for messages: "`code` and `code_cleanup`".
std::string tags_with(MacroFamily family) {
  std::vector<std::string_view> tags;
  for (ExpansionMethod const& m : expansion_methods())
    if (family == MacroFamily::sub ? m.macros.sub : m.macros.io) tags.push_back(m.tag);
  std::string out;
  for (std::size_t i = 0; i < tags.size(); ++i) {
    out += i == 0 ? "" : i + 1 == tags.size() ? " and " : ", ";
    out += "`" + std::string(tags[i]) + "`";
  }
  return out;
}

std::string quoted(std::string_view s) {
  std::string out(1, '`');
  out.append(s);
  out += '`';
  return out;
}

void report_out_of_scope(std::string_view name, MacroFamily family, std::string_view tag,
                         SourceRange range, std::vector<Diagnostic>& out) {
  switch (family) {
    case MacroFamily::sub:
      out.push_back(make_diagnostic(
          "SL301", quoted(name) + " is not defined in section " + quoted(tag) +
                       "; only " + tags_with(family) + " have it",
          range));
      break;
    case MacroFamily::io:
      out.push_back(make_diagnostic(
          "SL302", quoted(name) + " is not defined in section " + quoted(tag) +
                       "; only " + tags_with(family) + " have it",
          range));
      break;
    case MacroFamily::apply: {
      auto d = make_diagnostic("SL303", quoted(name) + " is not defined in section " + quoted(tag) +
                                            ", which is shared by every apply of the op",
                               range);
      d.notes.push_back({"move this code to `" + std::string(tag) + "_apply`", {}});
      out.push_back(std::move(d));
      break;
    }
    case MacroFamily::none: break;
  }
}

void check_arity(std::string_view name, GeneratedMacro const& m, OpDescription const& op,
                 SourceRange range, std::vector<Diagnostic>& out) {
  auto const n = arity(m.is_input ? op.inputs : op.outputs);
  if (!m.index || !n || *m.index < *n) return;
  std::string const what = m.is_input ? "input" : "output";
  std::string message = quoted(name) + " refers to " + what + " " + std::to_string(*m.index) +
                        " but the op has " + std::to_string(*n) + " " + what +
                        (*n == 1 ? "" : "s");
  auto d = make_diagnostic("SL601", std::move(message), range);
  if (*n > 0)
    d.notes.push_back({what + " indices run from 0 to " + std::to_string(*n - 1), {}});
  out.push_back(std::move(d));
}

}  // namespace

std::span<LintRule const> macro_scope_rules() { return rules; }

void check_macro_scope(FileView const& file, OpDescription const& op,
                       std::vector<Diagnostic>& out) {
  for (auto const& block : file.blocks) {
    std::string_view const tag = block.block.tag;
    if (!is_section_tag(tag)) continue;  // SL201 already; its scope is unknown
    for (auto const& token : block.body.tokens) {
      if (token.kind != TokenKind::identifier) continue;
      auto const name = file.spelling(token);
      auto const macro = classify(name);
      if (macro.family == MacroFamily::none) continue;
      if (!in_scope(macro.family, tag)) {
        report_out_of_scope(name, macro.family, tag, file.range(token), out);
      } else {
        check_arity(name, macro, op, file.range(token), out);
      }
    }
    for (auto const& directive : block.body.directives) {
      if (directive.name != "define" || !directive.macro) continue;
      auto const name = file.spelling(*directive.macro);
      if (classify(name).family == MacroFamily::none) continue;
      out.push_back(make_diagnostic(
          "SL304", quoted(name) + " is generated by the expander; defining it here clashes with the generated definition",
          file.range(*directive.macro)));
    }
  }
}

}  // namespace section::lint_detail
