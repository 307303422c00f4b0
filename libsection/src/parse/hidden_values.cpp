// SL306: an array's elements reached through a plain floating type, found with the C scanner:
// a C cast `(double*)`, a C++ cast `static_cast<double*>`/`reinterpret_cast<double*>`, or a
// C declaration `double* p = PyArray_DATA(x)`, whose operand reaches an array's data.
// SL307: a float array made (`PyArray_EMPTY`, `PyArray_ZEROS`, `PyArray_SimpleNew`, ...) or
// converted (`PyArray_FROM_OTF`, `PyArray_FROMANY`, `PyArray_ContiguousFromAny`, ...) with a
// fixed floating type number (`NPY_DOUBLE`) among its arguments.
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
libsection derives an op's gradient from its C code by compiling the code again with the
DTYPE macros of its float inputs and outputs naming a number that carries derivatives: a dual
number (a value and its derivatives) for forward mode, a taped number (a value and its place
on the tape of the operations) for reverse mode. Written with the macros, the same code then
computes the derivatives. A cast to plain `double` reads the elements of an array of such
numbers as if they were doubles: wrong values, and no compiler can see it. When it is asked for such an op's gradient, libsection
refuses the op at this line (where the array is one that carries derivatives) rather than
return wrong derivatives.

A value kept in a plain `double` variable needs no rule: these numbers do not convert to
`double`, so that is a compile error, which libsection tells at its line with the same advice.

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

constexpr LintRule fixed_float_type_number{
    .code = "SL307",
    .name = "fixed-float-type-number",
    .severity = Severity::warning,
    .summary = "a float array made or converted with a fixed type number (`NPY_DOUBLE`), in an "
               "op whose gradient is derived from its C code",
    .documentation = R"md(## What it does
In an op meant to be differentiated (`section-lint --differentiated`, or `differentiated = true`
in a `signatures` entry of the settings), reports an array made or converted with a fixed
floating type number instead of the array's TYPENUM macro: `PyArray_EMPTY(1, dims, NPY_DOUBLE,
0)`, `PyArray_ZEROS`, `PyArray_SimpleNew`, `PyArray_New`, `PyArray_Empty` with
`PyArray_DescrFromType(NPY_FLOAT64)`, and `PyArray_FROM_OTF(x, NPY_DOUBLE, flags)`,
`PyArray_FROMANY`, `PyArray_ContiguousFromAny`, `PyArray_FromObject`, `PyArray_Cast`.

## Why is this bad?
libsection derives an op's gradient from its C code by compiling the code a second time with
the DTYPE and TYPENUM macros of its float inputs and outputs naming a number that carries
derivatives (a dual number, or a taped one), larger than a `double`. An output made as float64
is then too small for the numbers the code writes into it: the code writes past its end and
corrupts the heap. An input converted to float64 fails when the gradient runs (NumPy's
`Cannot cast array data` error, naming no op): no cast drops derivatives. When it is asked for
such an op's gradient, libsection refuses the op at this line (where the array is an output or
an input that carries derivatives) before any code runs.

## Example
```c
#section support_code_apply
int APPLY_SPECIFIC(scale)(PyArrayObject* x, PyArrayObject** z) {
    PyArrayObject* xs = (PyArrayObject*)PyArray_FROM_OTF((PyObject*)x, NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), NPY_DOUBLE, 0);
    ...
```

## Use instead
```c
    PyArrayObject* xs = (PyArrayObject*)PyArray_FROM_OTF((PyObject*)x, TYPENUM_INPUT_0, NPY_ARRAY_IN_ARRAY);
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
```
`TYPENUM_OUTPUT_0` is `NPY_FLOAT64` in the op's own module, so nothing changes there. A scratch
array of plain numbers that never holds a value of the differentiated inputs may keep its type
number with `// section-lint: ignore[SL307]` on its line, which the gradient's build honours
too.
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
// What makes an array (SL307): its type number is an argument, or a descriptor's argument.
constexpr std::string_view makers[] = {
    "PyArray_EMPTY",   "PyArray_ZEROS", "PyArray_SimpleNew",    "PyArray_New",
    "PyArray_Empty",   "PyArray_Zeros", "PyArray_NewFromDescr", "PyArray_SimpleNewFromData",
    "PyArray_FromDims"};
// What converts an array to a type number (SL307): the array is the first argument.
constexpr std::string_view converters[] = {"PyArray_FROM_OTF",
                                           "PyArray_FROM_OT",
                                           "PyArray_FROMANY",
                                           "PyArray_ContiguousFromAny",
                                           "PyArray_ContiguousFromObject",
                                           "PyArray_CopyFromObject",
                                           "PyArray_FromObject",
                                           "PyArray_FromAny",
                                           "PyArray_CheckFromAny",
                                           "PyArray_Cast",
                                           "PyArray_CastToType"};
constexpr std::string_view float_type_numbers[] = {"NPY_DOUBLE",  "NPY_FLOAT64",    "NPY_FLOAT",
                                                   "NPY_FLOAT32", "NPY_LONGDOUBLE", "NPY_HALF",
                                                   "NPY_FLOAT16", "NPY_FLOAT96",    "NPY_FLOAT128"};
// Words that may stand in a cast on the way to the accessor: `(double*)(char*)PyArray_DATA(x)`.
constexpr std::string_view cast_words[] = {"char",     "void",   "const",    "volatile",
                                           "unsigned", "signed", "npy_byte", "npy_ubyte",
                                           "uint8_t",  "int8_t"};

template <std::size_t N>
bool one_of(std::string_view word, std::string_view const (&words)[N]) {
  return std::find(std::begin(words), std::end(words), word) != std::end(words);
}

class HiddenValueScanner {
 public:
  HiddenValueScanner(SourceManager const& sm, Block const& block)
      : file_(sm.file(block.body.file)), id_(block.body.file), text_(file_.text()),
        body_(c_scan::tokenize(text_, block.body.begin, block.body.end)) {}

  void scan(std::vector<HiddenValue>& out) {
    for (std::size_t i = 0; i < tokens().size(); ++i) {
      std::string_view const word = text(i);
      if (word == "(") c_cast(i, out);
      else if (word == "static_cast" || word == "reinterpret_cast") cxx_cast(i, out);
      else if (one_of(word, plain_float_types) && (i == 0 || text(i - 1) != "("))
        declaration(i, out);
      else if (one_of(word, makers)) fixed_type(i, HiddenValue::Kind::made, out);
      else if (one_of(word, converters)) fixed_type(i, HiddenValue::Kind::converted, out);
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

  /// The index after the parenthesis that closes the one at `open`.
  std::size_t after_parentheses(std::size_t open) const {
    int depth = 0;
    for (std::size_t k = open; k < tokens().size(); ++k) {
      if (text(k) == "(") ++depth;
      if (text(k) == ")" && --depth == 0) return k + 1;
    }
    return tokens().size();
  }

  /// The array an allocation at `call` is assigned to: the name before the `=` in front of it,
  /// past a cast (`*z = (PyArrayObject*)PyArray_EMPTY(...)`); empty when there is none.
  std::string assigned_to(std::size_t call) const {
    std::size_t k = call;
    while (k > 0) {
      std::string_view const w = text(k - 1);
      if (w != "(" && w != ")" && w != "*" && w != "const" && w != "PyArrayObject" &&
          w != "PyObject")
        break;
      --k;
    }
    if (k < 2 || text(k - 1) != "=" || tokens()[k - 2].kind != TokenKind::identifier) return {};
    return std::string(text(k - 2));
  }

  /// The array a conversion at `call` converts: the last name of its first argument (`x` of
  /// `(PyObject*)x`).
  std::string converted(std::size_t call, std::size_t end) const {
    std::string name;
    int depth = 0;
    for (std::size_t k = call + 1; k < end; ++k) {
      std::string_view const w = text(k);
      if (w == "(") ++depth;
      if (w == ")") --depth;
      if (depth == 1 && w == ",") break;
      if (tokens()[k].kind == TokenKind::identifier && w != "PyObject" && w != "PyArrayObject")
        name = w;
    }
    return name;
  }

  /// `call(..., NPY_DOUBLE, ...)`: a maker or a converter with a fixed float type number.
  void fixed_type(std::size_t call, HiddenValue::Kind kind, std::vector<HiddenValue>& out) {
    if (text(call + 1) != "(") return;
    std::size_t const end = after_parentheses(call + 1);
    for (std::size_t k = call + 2; k < end; ++k) {
      if (!one_of(text(k), float_type_numbers)) continue;
      HiddenValue v;
      v.kind = kind;
      v.range = {id_, tokens()[k].begin, tokens()[k].end};
      v.type = text(k);
      v.accessor = text(call);
      v.array = kind == HiddenValue::Kind::made ? assigned_to(call) : converted(call, end);
      v.suppressed = suppressed_on_line(tokens()[call].begin, "SL307");
      out.push_back(std::move(v));
      return;
    }
  }

  bool suppressed_on_line(std::size_t offset, std::string_view code = "SL306") const {
    std::string_view const line = file_.line_text(offset);
    std::size_t const begin = static_cast<std::size_t>(line.data() - text_.data());
    for (auto const& c : body_.comments) {
      if (c.end <= begin || c.begin >= begin + line.size()) continue;
      std::string_view const comment = text_.substr(c.begin, c.end - c.begin);
      auto const at = comment.find("section-lint:");
      if (at == std::string_view::npos) continue;
      auto const list = comment.find("ignore[", at);
      if (list != std::string_view::npos && comment.find(code, list) != std::string_view::npos)
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
    if (is_section_tag(block.tag) && block.body.valid()) HiddenValueScanner(sm, block).scan(out);
  return out;
}

namespace {

/// SL307: what the array made or converted with a fixed type number becomes, and what to write.
Diagnostic fixed_type_diagnostic(HiddenValue const& found, std::string const& use_instead) {
  bool const made = found.kind == HiddenValue::Kind::made;
  std::string macro = use_instead;
  if (macro.starts_with("DTYPE_")) macro = "TYPENUM_" + macro.substr(6);
  macro = macro.empty()
              ? (made ? "TYPENUM_OUTPUT_i of that output" : "TYPENUM_INPUT_i of that input")
              : "`" + macro + "`";
  std::string const array = found.array.empty() ? "an array" : "`" + found.array + "`";
  std::string const what =
      made ? array + " is made by `" + found.accessor + "` with `" + found.type +
                 "`: where libsection derives the op's gradient from its C code, a float "
                 "output holds numbers that carry derivatives (larger than a `double`), which "
                 "the code would write past the end of this array (a heap corruption)"
           : "`" + found.accessor + "` converts " + array + " with `" + found.type +
                 "`: where libsection derives the op's gradient from its C code, the elements of "
                 "an input that carries derivatives are numbers that carry them, which no cast "
                 "turns into plain floats (NumPy refuses it when the gradient runs)";
  std::string elements;  // what to read a converted input's elements as
  if (!made && use_instead.starts_with("DTYPE_"))
    elements = ", and read its elements as `" + use_instead + "`";
  Diagnostic d =
      make_diagnostic(fixed_float_type_number,
                      what + "; write " + macro + " in place of `" + found.type + "`" + elements +
                          " (in the op's own module it is the array's type number)",
                      found.range);
  if (!use_instead.empty())
    d.fix = FixIt{"write " + macro, found.range, macro.substr(1, macro.size() - 2),
                  Applicability::unsafe};
  return d;
}

}  // namespace

Diagnostic hidden_value_diagnostic(HiddenValue const& found, std::string const& use_instead) {
  if (found.kind != HiddenValue::Kind::cast) return fixed_type_diagnostic(found, use_instead);
  std::string const access = found.accessor == "->data" ? found.array + "->data"
                                                        : found.accessor + "(" + found.array + ")";
  std::string const macro = use_instead.empty() ? "DTYPE_INPUT_i or DTYPE_OUTPUT_i of that array"
                                                : "`" + use_instead + "`";
  return make_diagnostic(
      element_read_as_plain_float,
      "`" + access + "` is read as plain `" + found.type +
          "`: where libsection derives the op's gradient from its C code, the elements of an "
          "array that carries derivatives are numbers that carry them (dual or taped numbers), "
          "which this cast would read wrong; write " +
          macro + " in place of `" + found.type +
          "` (in the op's own module it names the array's element type)",
      found.range);
}

std::span<LintRule const* const> hidden_value_rules() {
  static constexpr LintRule const* rules[] = {&element_read_as_plain_float,
                                              &fixed_float_type_number};
  return rules;
}

}  // namespace section::detail
