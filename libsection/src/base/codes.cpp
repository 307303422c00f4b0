// The code table: every diagnostic code with its name, severity and documentation.
#include "section/codes.hpp"

#include <algorithm>
#include <stdexcept>

namespace section {
namespace {

// Sorted by code (a test checks it): SE1xx, then SL0xx..SL9xx, then the compiler's codes.
constexpr DiagnosticCode codes[] = {
    {"SE101", "unknown-dtype", Severity::error, "a dtype the generated macros cannot describe",
     R"md(## What it does
Reports an input or output dtype outside bool, int8..int64, uint8..uint64, float16, float32,
float64, complex64 and complex128.

## Why is this bad?
The expander defines `DTYPE_INPUT_k`, `TYPENUM_INPUT_k` and `ITEMSIZE_INPUT_k` from the dtype;
for an unknown one it cannot, and nothing is expanded.

## Example
An apply signature with the input dtype `float128`.

## Use instead
One of the dtypes listed above.
)md",
     Reporter::expander},
    {"SE102", "signature-mismatch", Severity::error,
     "the apply signature's names and types disagree",
     R"md(## What it does
Reports an apply signature with a different number of input (or output) names than types.

## Why is this bad?
The expander pairs each `INPUT_k`/`OUTPUT_k` with a name and a type; with the counts apart the
macros would name variables that do not exist.

## Example
Two input dtypes and one input name.

## Use instead
One name per input and per output.
)md",
     Reporter::expander},
    {"SE104", "bad-function-name", Severity::error, "`func_name` is not a C function name",
     R"md(## What it does
Reports a `func_name` that is not a C identifier, a `::`-qualified name, or
`APPLY_SPECIFIC(name)`.

## Why is this bad?
The name is pasted into the generated `c_code` call; anything else would inject text into the
generated C.

## Example
`func_name = "f(x); g"`.

## Use instead
`f`, `ns::f` or `APPLY_SPECIFIC(f)`.
)md",
     Reporter::expander},
    {"SE105", "bad-padding", Severity::error, "`num_inputs`/`num_outputs` outside 0 to 1024",
     R"md(## What it does
Reports a padding count (`_cop_num_inputs`, `_cop_num_outputs`) below 0 or above 1024.

## Why is this bad?
The expander generates one argument per padded input and output; such counts are mistakes and
would generate an unusable call.

## Example
`_cop_num_inputs = -1`.

## Use instead
A count from 0 to 1024, or none (the node's own arity).
)md",
     Reporter::expander},
    {"SL001", "invalid-utf8", Severity::error, "the file is not valid UTF-8",
     R"md(## What it does
Reports the first byte that is not part of a valid UTF-8 sequence, with its byte offset.

## Why is this bad?
PyTensor reads section files with `encoding="utf-8"` and raises `UnicodeDecodeError`; the op
cannot be loaded. Nothing else in the file is checked.

## Example
A file saved as Latin-1 with `// café` in a comment.

## Use instead
Re-save the file as UTF-8.
)md",
     Reporter::parser},
    {"SL002", "utf8-bom", Severity::warning, "the file starts with a UTF-8 byte order mark",
     R"md(## What it does
Reports a UTF-8 byte order mark (U+FEFF) at the start of the file.

## Why is this bad?
The reference loaders keep the BOM as text, so a marker on the first line is not at the start
of its line: the file fails with "Stray code before first #section statement" or "No valid
section marker was found".

## Example
A file saved by an editor set to "UTF-8 with BOM".

## Use instead
Save as UTF-8 without a BOM (the fix removes the three bytes).
)md",
     Reporter::parser},
    {"SL003", "binary-file", Severity::warning, "the file contains NUL bytes",
     R"md(## What it does
Reports a NUL byte, the sign of a binary file (an object file, an image) given as a section file.

## Why is this bad?
A C compiler rejects the text, and the file is almost certainly not the one meant.

## Example
`section-lint build/` over a folder holding compiled `*.o` files renamed `*.c`.

## Use instead
Point the op (or `section-lint`) at the C source.
)md",
     Reporter::parser},
    {"SL004", "unreadable-file", Severity::error, "the file cannot be read",
     R"md(## What it does
Reports a path that does not exist, is a directory given where a file was expected, or
cannot be opened (permissions), with the system's reason.

## Why is this bad?
The reference loader raises `FileNotFoundError` (or another `OSError`) when the op is created.

## Example
`func_files = ["vectorTimesVector.c"]` while the file is named `vector_times_vector.c`.

## Use instead
Fix the path; relative paths are relative to the op class's own Python file.
)md",
     Reporter::parser},
    {"SL101", "malformed-section-marker", Severity::warning,
     "a line looks like a section marker but is not one",
     R"md(## What it does
Reports lines that look like `#section <tag>` but do not match the reference's exact syntax
`^#section [A-Za-z0-9_]+$`: indented, trailing blanks, a tab or two spaces after `#section`,
`# section`, upper case, bad tag characters, text after the tag. Also indented or trailing-blank
legacy markers.

## Why is this bad?
The reference silently reads such a line as C code of the previous section (or as stray text
before the first marker). The section you meant to start does not exist, and the C compiler
later fails on a line starting with `#section`.

## Example
```c
#section  support_code
```

## Use instead
```c
#section support_code
```
)md",
     Reporter::parser},
    {"SL102", "legacy-section-marker", Severity::warning,
     "a deprecated `*_APPLY_CODE_SECTION`/`*_SUPPORT_CODE_SECTION` marker",
     R"md(## What it does
Reports the legacy markers `THEANO_`, `AESARA_` or `PYTENSOR_` + `APPLY_CODE_SECTION` /
`SUPPORT_CODE_SECTION`.

## Why is this bad?
Each reference library recognises only its own prefix, so a file written for one fails in the
others. A repeated legacy marker *replaces* the earlier block, unlike `#section`, which
concatenates; and text before the first legacy marker is silently dropped.

## Example
```c
PYTENSOR_APPLY_CODE_SECTION
```

## Use instead
```c
#section support_code_apply
```
)md",
     Reporter::parser},
    {"SL103", "mixed-marker-styles", Severity::error,
     "legacy markers and `#section` markers in the same op",
     R"md(## What it does
Reports a file (or set of files) using both legacy markers and `#section` markers.

## Why is this bad?
The reference raises "Both the new and the old syntax for identifying code sections are
present in the provided C code."

## Example
```c
#section support_code
int x;
PYTENSOR_APPLY_CODE_SECTION
int y;
```

## Use instead
Use `#section` markers only.
)md",
     Reporter::parser},
    {"SL201", "unknown-section-tag", Severity::error, "a section tag that is not one of the nine",
     R"md(## What it does
Reports `#section <tag>` lines whose tag is not one of `init_code`, `init_code_apply`,
`init_code_struct`, `support_code`, `support_code_apply`, `support_code_struct`,
`cleanup_code_struct`, `code`, `code_cleanup`, with a did-you-mean fix when one is close.

## Why is this bad?
The reference raises "Unknown section type (in file X): tag".

## Example
```c
#section suport_code
```

## Use instead
```c
#section support_code
```
)md",
     Reporter::parser},
    {"SL202", "code-before-first-section", Severity::error,
     "text other than whitespace before the first `#section` line",
     R"md(## What it does
Reports the first non-whitespace text before the first marker.

## Why is this bad?
The reference raises "Stray code before first #section statement". Comments count as code
there too.

## Example
```c
// vector helpers
#section support_code
```

## Use instead
```c
#section support_code
// vector helpers
```
)md",
     Reporter::parser},
    {"SL203", "no-section-marker", Severity::error, "a file without any section marker",
     R"md(## What it does
Reports a file in which no line is a `#section` or legacy marker, and points at lines that
almost are.

## Why is this bad?
The reference raises "No valid section marker was found in file X".

## Example
A plain C file, or one whose only marker is indented.

## Use instead
Start each part of the file with `#section <tag>` in column 1.
)md",
     Reporter::parser},
    {"SL204", "no-sections", Severity::error, "no section at all in the files of an op",
     R"md(## What it does
Reports a run that found no section files at all (an op with `func_files = []`, or a folder
without `*.c`/`*.h` files).

## Why is this bad?
The reference raises "No sections where defined in the C files" (sic).

## Example
`section-lint src/` where `src/` holds only `*.cpp` files.

## Use instead
Give the section files.
)md",
     Reporter::parser},
    {"SL205", "empty-section", Severity::info, "a section whose body is only whitespace",
     R"md(## What it does
Reports a marker followed directly by the next marker (or only blank lines).

## Why is this bad?
It is harmless, but usually a leftover or a misplaced marker.

## Example
```c
#section support_code
#section support_code_apply
int APPLY_SPECIFIC(x);
```

## Use instead
Remove the empty marker.
)md",
     Reporter::parser},
    {"SL206", "repeated-section", Severity::info, "a tag that appears more than once",
     R"md(## What it does
Reports the second and later blocks of the same tag in one file.

## Why is this bad?
It works: the blocks are concatenated in order (the reference's docstring wrongly says later
ones override). It is reported so that the concatenation is a visible choice.

## Example
```c
#section support_code
int a;
#section code
#section support_code
int b;
```

## Use instead
Merge the blocks, or keep them and ignore SL206.
)md",
     Reporter::parser},
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
     Reporter::linter},
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
     Reporter::linter},
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
     Reporter::linter},
    {"SL303", "apply-macro-in-global-section", Severity::error,
     "`APPLY_SPECIFIC`, `DTYPE_*`, `TYPENUM_*` or `ITEMSIZE_*` used in `init_code` or "
     "`support_code`",
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
     Reporter::linter},
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
     Reporter::linter},
    {"SL305", "misspelled-generated-macro", Severity::warning,
     "a name one typo away from a macro the expander generates",
     R"md(## What it does
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
     Reporter::linter},
    {"SL401", "missing-apply-specific", Severity::warning,
     "a function, global or type defined in `support_code_apply` without `APPLY_SPECIFIC`",
     R"md(## What it does
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
     Reporter::linter},
    {"SL501", "return-in-code", Severity::error, "`return` in a `code` section; use `FAIL`",
     R"md(## What it does
Flags `return` statements in a `code` section (outside lambdas and local class members).

## Why is this bad?
The expander pastes `code` into the body of the module's generated `run()` function, inside
nested blocks whose cleanup code releases the inputs and outputs and reports errors. A
`return` leaves `run()` directly: the cleanup never runs (leaking references), outputs are
not stored, and an error set with `PyErr_SetString` is not reported as the op's failure.
`FAIL` sets the failure code and jumps to the cleanup.

## Example
```c
#section code
if (PyArray_NDIM(INPUT_0) != 1) {
    PyErr_SetString(PyExc_ValueError, "x must be 1-d");
    return 1;
}
```

## Use instead
```c
#section code
if (PyArray_NDIM(INPUT_0) != 1) {
    PyErr_SetString(PyExc_ValueError, "x must be 1-d");
    FAIL;
}
```
)md",
     Reporter::linter},
    {"SL502", "goto-out-of-code", Severity::error,
     "`goto` to a label the `code` section does not define",
     R"md(## What it does
Flags `goto label` in a `code` section when no block of the file's `code` section defines
`label`.

## Why is this bad?
The target is either missing (a compile error in the generated module) or a label of the
generated code such as `__label_7`, whose number changes with the graph. Jumping there skips
the failure bookkeeping `FAIL` does.

## Example
```c
#section code
if (!ok) goto __label_7;
```

## Use instead
```c
#section code
if (!ok) FAIL;
```
)md",
     Reporter::linter},
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
     Reporter::linter},
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
     Reporter::linter},
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
     Reporter::linter},
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
     Reporter::linter},
    {"SL901", "unused-suppression", Severity::warning,
     "a suppression comment that suppresses nothing",
     R"md(## What it does
Reports codes in `// section-lint: ignore[...]` and `ignore-file[...]` comments that matched
no finding. Codes of rules turned off with `--select`/`--ignore` are not reported.

## Why is this bad?
A stale suppression hides the next real problem of that kind on the line (or in the file).

## Example
```c
int x = 1;  // section-lint: ignore[SL301]
```

## Use instead
Remove the comment (the fix does), or the codes that no longer apply.
)md",
     Reporter::linter},
    {"SL902", "unknown-code-in-suppression", Severity::warning,
     "a suppression comment names a code that is not a rule",
     R"md(## What it does
Reports codes in suppression comments that are not rule codes (`section-lint --list-rules`).

## Why is this bad?
The comment suppresses nothing; usually the code is misspelled and the finding it was meant
to silence is still reported, or will be.

## Example
```c
FAIL;  // section-lint: ignore[SL31]
```

## Use instead
```c
FAIL;  // section-lint: ignore[SL301]
```
)md",
     Reporter::linter},
    {"SL903", "malformed-suppression", Severity::warning,
     "a `section-lint:` comment that is not a valid suppression",
     R"md(## What it does
Reports comments containing `section-lint:` that do not continue with `ignore[CODE, ...]` or
`ignore-file[CODE, ...]`.

## Why is this bad?
The comment was meant to suppress something and does not.

## Example
```c
// section-lint: ignore SL301
// section-lint: noqa[SL301]
```

## Use instead
```c
// section-lint: ignore[SL301]
```
A comment `ignore[...]` applies to findings starting on its line; `ignore-file[...]` to the
whole file, wherever it is.
)md",
     Reporter::linter},
    {"compile-error", "", Severity::error,
     "the C compiler's error, mapped through `#line` to your `.c` file and line",
     R"md(## What it does
Reports each error of the C compiler that built the op, at the line of the section file it
comes from (the generated module carries `#line` directives).

## Why is this bad?
The op cannot be built.

## Use instead
Fix the C code at the reported line; the full log and command are kept in the cache's
`failed/` folder.
)md",
     Reporter::compiler},
    {"compile-warning", "", Severity::warning, "the C compiler's warning, mapped likewise",
     R"md(## What it does
Reports each warning of the C compiler that built the op, at the line of the section file it
comes from.

## Why is this bad?
Compiler warnings often point at real bugs (an uninitialised variable, a wrong format string).

## Use instead
Fix the C code at the reported line.
)md",
     Reporter::compiler},
};

}  // namespace

std::span<DiagnosticCode const> diagnostic_codes() { return codes; }

DiagnosticCode const* find_diagnostic_code(std::string_view code) {
  auto const it =
      std::lower_bound(std::begin(codes), std::end(codes), code,
                       [](DiagnosticCode const& c, std::string_view k) { return c.code < k; });
  return it != std::end(codes) && it->code == code ? &*it : nullptr;
}

std::string explain_code(DiagnosticCode const& code) {
  std::string out = "# " + std::string(code.code);
  if (!code.name.empty()) out += " (" + std::string(code.name) + ")";
  out += "\n\n" + std::string(code.summary) + ".\n\n";
  char const* reporter = "";
  switch (code.reported_by) {
    case Reporter::parser: reporter = "the parser (also when an op is loaded)"; break;
    case Reporter::linter: reporter = "section-lint"; break;
    case Reporter::expander:
      reporter = "the expander, for one apply of an op (section-expand, the Python package)";
      break;
    case Reporter::compiler: reporter = "the C compiler, when an op is built"; break;
  }
  out +=
      "Severity: " + std::string(to_string(code.severity)) + ". Reported by " + reporter + ".\n\n";
  return out + std::string(code.documentation);
}

Diagnostic make_diagnostic(std::string_view code, std::string message, SourceRange range) {
  auto const* entry = find_diagnostic_code(code);
  if (!entry)
    throw std::logic_error("diagnostic code `" + std::string(code) + "` is not in the code table");
  Diagnostic d;
  d.code = std::string(code);
  d.severity = entry->severity;
  d.message = std::move(message);
  d.range = range;
  return d;
}

}  // namespace section
