// section-lint SL0xx, SL1xx, SL201–SL206: documentation of what the parser reports. The linter
// passes those diagnostics through; these entries give them names, docs and rule metadata.
#include "lint/checks.hpp"

namespace section::lint_detail {
namespace {

constexpr LintRule rules[] = {
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
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
     true},
};

}  // namespace

std::span<LintRule const> parser_rules() { return rules; }

}  // namespace section::lint_detail
