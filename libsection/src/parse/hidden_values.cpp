// SL306: an array's elements reached through a plain floating type, found with the C scanner:
// a C cast `(double*)`, a C++ cast `static_cast<double*>`/`reinterpret_cast<double*>`, or a
// C declaration `double* p = PyArray_DATA(x)`, whose operand reaches an array's data.
#include "parse/hidden_values.hpp"

#include <algorithm>
#include <string_view>

#include "parse/c_tokens.hpp"

namespace section::detail {
namespace {

constexpr LintRule element_read_as_plain_float{
    .code = "SL306",
    .name = "element-read-as-plain-float",
    .severity = Severity::warning,
    .summary = "an array's elements reached through a plain floating type, in an op whose gradient "
               "is derived from its C code",
    .documentation = R"md(## What it does
In an op meant to be differentiated (`section-lint --differentiated`, or `differentiated = true`
in a `signatures` entry of the settings), reports a cast of an array's data to a plain floating
pointer type instead of the array's DTYPE macro: `(double*)PyArray_DATA(x)`,
`(npy_float64*)PyArray_GETPTR1(x, i)`, `reinterpret_cast<float*>(PyArray_BYTES(x))`, and in C
`double* p = PyArray_DATA(x);`.

## Why is this bad?
libsection derives an op's gradient from its C code by compiling the code a second time with
the DTYPE macros of its float inputs and outputs naming a dual number: a value and its
derivatives. Written with the macros, the same code then computes the derivatives. A cast to
plain `double` reads the elements of an array of dual numbers as if they were doubles: wrong
values, and no compiler can see it. When it is asked for such an op's gradient, libsection
refuses the op at this line (where the array is one that carries derivatives) rather than
return wrong derivatives.

A value kept in a plain `double` variable needs no rule: a dual does not convert to `double`,
so that is a compile error, which libsection tells at its line with the same advice.

## Example
```c
#section support_code_apply
int APPLY_SPECIFIC(total)(PyArrayObject* x, PyArrayObject** z) {
    double* v = (double*)PyArray_DATA(x);
    ...
```

## Use instead
```c
    DTYPE_INPUT_0* v = (DTYPE_INPUT_0*)PyArray_DATA(x);
```
`DTYPE_INPUT_0` is `npy_float64` in the op's own module, so nothing changes there. An array
that never holds a value of the differentiated inputs (a scratch buffer of plain numbers) may
keep its cast with `// section-lint: ignore[SL306]` on its line, which the gradient's build
honours too.
)md",
    .reported_by = Reporter::linter,
};

using c_scan::Token;
using c_scan::TokenKind;

constexpr std::string_view plain_float_types[] = {"double",         "float",        "npy_double",
                                                  "npy_float",      "npy_float64",  "npy_float32",
                                                  "npy_longdouble", "npy_float128", "npy_float96"};
constexpr std::string_view accessors[] = {
    "PyArray_DATA",    "PyArray_BYTES",   "PyArray_GETPTR1", "PyArray_GETPTR2",
    "PyArray_GETPTR3", "PyArray_GETPTR4", "PyArray_GetPtr",  "PyArray_MultiIndexGetItem"};
// Words that may stand in a cast on the way to the accessor: `(double*)(char*)PyArray_DATA(x)`.
constexpr std::string_view cast_words[] = {"char",     "void",   "const",    "volatile",
                                           "unsigned", "signed", "npy_byte", "npy_ubyte",
                                           "uint8_t",  "int8_t"};

template <std::size_t N>
bool one_of(std::string_view word, std::string_view const (&words)[N]) {
  return std::find(std::begin(words), std::end(words), word) != std::end(words);
}

class Scanner {
 public:
  Scanner(SourceManager const& sm, Block const& block)
      : file_(sm.file(block.body.file)), id_(block.body.file), text_(file_.text()),
        body_(c_scan::tokenize(text_, block.body.begin, block.body.end)) {}

  void scan(std::vector<HiddenValue>& out) {
    for (std::size_t i = 0; i < tokens().size(); ++i) {
      std::string_view const word = text(i);
      if (word == "(") c_cast(i, out);
      else if (word == "static_cast" || word == "reinterpret_cast") cxx_cast(i, out);
      else if (one_of(word, plain_float_types) && (i == 0 || text(i - 1) != "("))
        declaration(i, out);
    }
  }

 private:
  std::vector<Token> const& tokens() const { return body_.tokens; }
  std::string_view text(std::size_t i) const {
    if (i >= tokens().size()) return {};
    return text_.substr(tokens()[i].begin, tokens()[i].end - tokens()[i].begin);
  }
  bool qualifier(std::size_t i) const {
    std::string_view const w = text(i);
    return w == "const" || w == "volatile" || w == "restrict" || w == "__restrict" ||
           w == "__restrict__";
  }
  std::size_t skip_qualifiers(std::size_t i) const {
    while (qualifier(i)) ++i;
    return i;
  }
  /// The plain floating type at `i` (`long double` is two words): its spelling and the index
  /// after it; nothing when there is none.
  std::optional<std::pair<std::string, std::size_t>> plain_type(std::size_t i) const {
    if (text(i) == "long" && text(i + 1) == "double") return std::pair{"long double", i + 2};
    if (one_of(text(i), plain_float_types)) return std::pair{std::string(text(i)), i + 1};
    return std::nullopt;
  }
  /// `T *` (qualifiers around it) at `i`: the type and the index after the `*`.
  std::optional<std::pair<std::string, std::size_t>> pointer_type(std::size_t i) const {
    auto type = plain_type(skip_qualifiers(i));
    if (!type) return std::nullopt;
    std::size_t const star = skip_qualifiers(type->second);
    if (text(star) != "*") return std::nullopt;
    return std::pair{type->first, skip_qualifiers(star + 1)};
  }

  /// The accessor an operand starting at `i` reaches the data with, past opening parentheses
  /// and byte casts; its index, or nothing.
  std::optional<std::size_t> accessor_at(std::size_t i) const {
    for (std::size_t k = i; k < tokens().size() && k < i + 16; ++k) {
      std::string_view const w = text(k);
      if (w == "(" || w == ")" || w == "*" || one_of(w, cast_words)) continue;
      if (one_of(w, accessors)) return k;
      if (tokens()[k].kind == TokenKind::identifier && text(k + 1) == "->" && text(k + 2) == "data")
        return k;  // the deprecated field, `x->data`
      return std::nullopt;
    }
    return std::nullopt;
  }

  void report(std::size_t begin, std::string type, std::size_t access,
              std::vector<HiddenValue>& out) {
    HiddenValue v;
    bool const field = text(access + 1) == "->";
    v.range = {id_, tokens()[begin].begin, tokens()[field ? access + 2 : access].end};
    v.type = std::move(type);
    v.accessor = field ? "->data" : std::string(text(access));
    if (field) {
      v.array = text(access);
    } else {
      for (std::size_t k = access + 1; k < tokens().size() && k < access + 8; ++k) {
        if (tokens()[k].kind == TokenKind::identifier) {
          v.array = text(k);
          break;
        }
        if (text(k) != "(" && text(k) != "*" && text(k) != "&") break;
      }
    }
    v.suppressed = suppressed_on_line(tokens()[begin].begin);
    out.push_back(std::move(v));
  }

  /// `(T*) operand`.
  void c_cast(std::size_t open, std::vector<HiddenValue>& out) {
    auto const pointer = pointer_type(open + 1);
    if (!pointer || text(pointer->second) != ")") return;
    if (auto access = accessor_at(pointer->second + 1)) report(open, pointer->first, *access, out);
  }

  /// `static_cast<T*>(operand)`.
  void cxx_cast(std::size_t at, std::vector<HiddenValue>& out) {
    if (text(at + 1) != "<") return;
    auto const pointer = pointer_type(at + 2);
    if (!pointer || text(pointer->second) != ">") return;
    if (auto access = accessor_at(pointer->second + 1)) report(at, pointer->first, *access, out);
  }

  /// `T* name = operand` without a cast (C converts `void*` implicitly).
  void declaration(std::size_t at, std::vector<HiddenValue>& out) {
    std::size_t begin = at;
    if (at > 0 && text(at - 1) == "long") --begin;
    auto const pointer = pointer_type(begin);
    if (!pointer) return;
    std::size_t const name = pointer->second;
    if (tokens().size() <= name + 2 || tokens()[name].kind != TokenKind::identifier ||
        text(name + 1) != "=")
      return;
    std::size_t const value = name + 2;
    if (one_of(text(value), accessors) || (text(value + 1) == "->" && text(value + 2) == "data"))
      report(begin, pointer->first, value, out);
  }

  bool suppressed_on_line(std::size_t offset) const {
    std::string_view const line = file_.line_text(offset);
    std::size_t const begin = static_cast<std::size_t>(line.data() - text_.data());
    for (auto const& c : body_.comments) {
      if (c.end <= begin || c.begin >= begin + line.size()) continue;
      std::string_view const comment = text_.substr(c.begin, c.end - c.begin);
      auto const at = comment.find("section-lint:");
      if (at == std::string_view::npos) continue;
      auto const list = comment.find("ignore[", at);
      if (list != std::string_view::npos && comment.find("SL306", list) != std::string_view::npos)
        return true;
    }
    return false;
  }

  SourceFile const& file_;
  FileId id_;
  std::string_view text_;
  c_scan::TokenizedBody body_;
};

}  // namespace

std::vector<HiddenValue> find_hidden_values(SourceManager const& sm,
                                            std::span<Block const> blocks) {
  std::vector<HiddenValue> out;
  for (Block const& block : blocks)
    if (is_section_tag(block.tag) && block.body.valid()) Scanner(sm, block).scan(out);
  return out;
}

Diagnostic hidden_value_diagnostic(HiddenValue const& found, std::string const& use_instead) {
  std::string const access = found.accessor == "->data" ? found.array + "->data"
                                                        : found.accessor + "(" + found.array + ")";
  std::string const macro = use_instead.empty() ? "DTYPE_INPUT_i or DTYPE_OUTPUT_i of that array"
                                                : "`" + use_instead + "`";
  return make_diagnostic(
      element_read_as_plain_float,
      "`" + access + "` is read as plain `" + found.type +
          "`: where libsection derives the op's gradient from its C code, the elements of an "
          "array that carries derivatives are dual numbers (a value and its derivatives), which "
          "this cast would read wrong; write " +
          macro + " in place of `" + found.type +
          "` (in the op's own module it names the array's element type)",
      found.range);
}

std::span<LintRule const* const> hidden_value_rules() {
  static constexpr LintRule const* rules[] = {&element_read_as_plain_float};
  return rules;
}

}  // namespace section::detail
