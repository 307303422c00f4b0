// SL208 and SL209: what a file declared C (`language = "c"`) may not hold, found with the C
// scanner (tokens, and the parameter lists of the declarations).
#include "parse/c_language.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "parse/c_tokens.hpp"
#include "parse/declarations.hpp"

namespace section::detail {
namespace {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from c_language_rules().

constexpr LintRule cxx_in_c_file{
    .code = "SL208",
    .name = "cxx-in-c-file",
    .severity = Severity::error,
    .summary = "a C++-only construct in a file declared C",
    .documentation = R"md(## What it does
In the files of an op declared C (`language = "c"` on the op, `build(..., language="c")`,
`section-lint --language c`), reports what only C++ accepts: `namespace`, `template`, `class`,
`typename`, `new` and `delete` used as operators, `try`/`catch`/`throw`, the scope operator `::`,
`nullptr`, the C++ casts (`static_cast<T>(x)` and the other three), references (`&`) and
default arguments (`= value`) in a function's parameter list, and `extern "C"`. Each is shown
at its token, with the C spelling.

`bool`, `true` and `false` are not reported: a module compiled as C includes `<stdbool.h>`
(PyTensor's C code uses them, the tutorial op too).

## Why is this bad?
An op declared C has its module compiled by the C compiler (`$CC`, `-x c -std=gnu11`), which
is faster to build than C++. A C++ construct there is a compile error, found only when the
module is built; libsection refuses the op earlier, with this diagnostic, and never compiles it
as C++ instead.

## Example
```c
#section support_code
static bool positive(double const& x) { return x > 0; }
double* buffer = new double[16];
```

## Use instead
```c
#section support_code
static bool positive(double const* x) { return *x > 0; }
double* buffer = malloc(16 * sizeof(double));
```
Or declare the op C++ (`language = "c++"`, the default).
)md",
    .reported_by = Reporter::linter,
};

constexpr LintRule struct_section_in_c_file{
    .code = "SL209",
    .name = "struct-section-in-c-file",
    .severity = Severity::error,
    .summary = "a struct section in a file declared C",
    .documentation = R"md(## What it does
In the files of an op declared C, reports a `support_code_struct`, `init_code_struct` or
`cleanup_code_struct` section that holds code.

## Why is this bad?
These sections are C++ by design: `support_code_struct` declares the members (and methods) of
the C++ struct PyTensor makes of each node, and `init_code_struct`, `cleanup_code_struct` and
`code` reach those members by their bare names, inside the struct's member functions. C has no
such scope: the members cannot be seen by bare name from functions outside the struct, so a
module compiled as C cannot hold them without changing what the code means. libsection refuses
the op instead of rewriting its code.

## Example
```c
#section support_code_struct
double* APPLY_SPECIFIC(buffer);

#section init_code_struct
APPLY_SPECIFIC(buffer) = NULL;
```

## Use instead
Keep per-node state the C code needs in `support_code_apply` (a `static` variable, one per
module: every instance of the module shares it), or declare the op C++ (`language = "c++"`,
the default), where the struct sections work as in PyTensor.
)md",
    .reported_by = Reporter::linter,
};

using c_scan::Token;
using c_scan::TokenKind;

class Scanner {
 public:
  Scanner(SourceManager const& sm, Block const& block, std::vector<Diagnostic>& out)
      : file_(block.body.file), text_(sm.file(block.body.file).text()),
        body_(c_scan::tokenize(text_, block.body.begin, block.body.end)), out_(out) {}

  bool blank() const { return body_.tokens.empty() && body_.directives.empty(); }

  /// `file_scope`: the body is declarations (the support sections), whose functions' parameter
  /// lists are checked too; other sections are statements (`for (int i = 0; ...)`).
  void check(bool file_scope) {
    auto const& tokens = body_.tokens;
    for (std::size_t i = 0; i < tokens.size(); ++i) check_token(i);
    if (!file_scope) return;
    for (auto const& d : c_scan::file_scope_declarations(text_, tokens))
      if (d.kind == c_scan::Declaration::Kind::function_definition ||
          d.kind == c_scan::Declaration::Kind::function_declaration)
        check_parameters(d.parameters_begin, d.parameters_end);
  }

 private:
  std::string_view text(std::size_t i) const {
    if (i >= body_.tokens.size()) return {};
    Token const t = body_.tokens[i];
    return text_.substr(t.begin, t.end - t.begin);
  }
  bool identifier(std::size_t i) const {
    return i < body_.tokens.size() && body_.tokens[i].kind == TokenKind::identifier;
  }
  bool literal(std::size_t i) const {
    return i < body_.tokens.size() && body_.tokens[i].kind == TokenKind::literal;
  }
  // Where a C++ operator keyword may stand: not a declared name (`int new;`, after a type
  // word) and not a member (`s.class`, `p->new`). `return new T` is an operator.
  bool starts_expression(std::size_t i) const {
    if (i == 0) return true;
    std::string_view const prev = text(i - 1);
    if (prev == "." || prev == "->") return false;
    return !identifier(i - 1) || prev == "return";
  }

  void report(std::size_t i, std::string const& message) {
    Token const t = body_.tokens[i];
    out_.push_back(make_diagnostic(cxx_in_c_file, message, {file_, t.begin, t.end}));
  }

  /// A C++ word where it is the C++ construct (`used` says, from the tokens around it), and
  /// what to write in C instead.
  struct CxxWord {
    std::string_view word;
    bool (*used)(Scanner const& s, std::size_t i);
    char const* message;
  };

  void check_token(std::size_t i) {
    std::string_view const word = text(i);
    if (word == "::") {
      report(i, "`::` (scope resolution) is C++: C has one scope for names; drop the qualifier "
                "(for `std::` functions, use the C library's: `<math.h>`, `<string.h>`, "
                "`<stdlib.h>`)");
      return;
    }
    if (!identifier(i)) return;
    auto const cast = [](Scanner const& s, std::size_t at) { return s.text(at + 1) == "<"; };
    auto const named = [](Scanner const& s, std::size_t at) {
      return s.identifier(at + 1) && s.starts_expression(at);
    };
    static constexpr CxxWord words[] = {
        {"static_cast", cast, "`static_cast` is C++: write a C cast, `(type)value`"},
        {"dynamic_cast", cast, "`dynamic_cast` is C++: write a C cast, `(type)value`"},
        {"const_cast", cast, "`const_cast` is C++: write a C cast, `(type)value`"},
        {"reinterpret_cast", cast, "`reinterpret_cast` is C++: write a C cast, `(type)value`"},
        {"nullptr", [](Scanner const& s, std::size_t at) { return s.starts_expression(at); },
         "`nullptr` is C++ (and C23): write `NULL`"},
        {"template", cast,
         "`template` is C++: write one function per type, or a macro that makes them"},
        {"namespace",
         [](Scanner const& s, std::size_t at) {
           return (s.identifier(at + 1) || s.text(at + 1) == "{") && s.starts_expression(at);
         },
         "`namespace` is C++: drop it, and give the names a prefix of their own (`myop_`) or "
         "make them `static`"},
        {"class", named,
         "`class` is C++: write a `struct`, and its methods as functions taking a pointer to it"},
        {"typename", named, "`typename` is C++: C has no templates; name the type itself"},
        {"new", named,
         "`new` is C++: allocate with `malloc` (or `PyMem_Malloc`) and check for NULL"},
        {"delete",
         [](Scanner const& s, std::size_t at) {
           return (s.identifier(at + 1) || s.text(at + 1) == "[") && s.starts_expression(at);
         },
         "`delete` is C++: release with `free` (or `PyMem_Free`, for `PyMem_Malloc`)"},
        {"try", [](Scanner const& s, std::size_t at) { return s.text(at + 1) == "{"; },
         "`try` is C++: C has no exceptions; check each call's result and `FAIL` (or return an "
         "error code) with a Python exception set"},
        {"catch",
         [](Scanner const& s, std::size_t at) {
           return s.text(at + 1) == "(" && at > 0 && s.text(at - 1) == "}";
         },
         "`catch` is C++: C has no exceptions; check each call's result instead"},
        {"throw",
         [](Scanner const& s, std::size_t at) {
           return (s.identifier(at + 1) || s.literal(at + 1) || s.text(at + 1) == ";") &&
                  s.starts_expression(at);
         },
         "`throw` is C++: set a Python exception (`PyErr_SetString`) and `FAIL`, or return an "
         "error code"},
        {"extern",
         [](Scanner const& s, std::size_t at) {
           return s.literal(at + 1) && s.text(at + 1).starts_with("\"C");
         },
         "`extern \"C\"` is C++: a C file's names have C linkage already; drop it"},
    };
    for (auto const& w : words) {
      if (w.word == word && w.used(*this, i)) {
        report(i, w.message);
        return;
      }
    }
  }

  // References and default arguments: at the parameter list's own depth, `&` and `=` only
  // occur in C++ (C writes `&` and `=` inside brackets only, as in an array's size).
  void check_parameters(std::size_t begin, std::size_t end) {
    auto const& tokens = body_.tokens;
    auto const first =
        std::lower_bound(tokens.begin(), tokens.end(), begin,
                         [](Token const& t, std::size_t offset) { return t.begin < offset; });
    int depth = 0;
    for (auto it = first; it != tokens.end() && it->begin < end; ++it) {
      std::size_t const i = static_cast<std::size_t>(it - tokens.begin());
      std::string_view const word = text(i);
      if (word == "(" || word == "[" || word == "{") ++depth;
      else if (word == ")" || word == "]" || word == "}") --depth;
      else if (depth != 1) continue;
      else if (word == "&" && text(i - 1) != "&") {
        report(i, "a reference parameter (`&`) is C++: take a pointer (`T* x`) and pass the "
                  "address (`&value`) at each call");
      } else if (word == "=") {
        report(i, "a default argument is C++: C functions take every argument; pass it at "
                  "each call");
      }
    }
  }

  FileId file_;
  std::string_view text_;
  c_scan::TokenizedBody body_;
  std::vector<Diagnostic>& out_;
};

}  // namespace

void check_c_language(SourceManager const& sm, std::span<Block const> blocks,
                      std::vector<Diagnostic>& out) {
  for (Block const& block : blocks) {
    if (!is_section_tag(block.tag) || !block.body.valid()) continue;
    Scanner scan(sm, block, out);
    if (!is_struct_tag(block.tag)) {
      scan.check(is_file_scope_tag(block.tag));
    } else if (!scan.blank()) {
      out.push_back(make_diagnostic(
          struct_section_in_c_file,
          "`" + block.tag +
              "` is C++: its code lives in the members of PyTensor's per-node struct, which C "
              "cannot reach by bare name; keep the state in `support_code_apply` (a `static`, "
              "shared by every instance of the module) or declare the op C++ (`language = "
              "\"c++\"`, the default)",
          block.tag_range));
    }
  }
}

std::span<LintRule const* const> c_language_rules() {
  static constexpr LintRule const* rules[] = {&cxx_in_c_file, &struct_section_in_c_file};
  return rules;
}

}  // namespace section::detail
