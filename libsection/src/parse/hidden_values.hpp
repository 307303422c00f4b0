// Values hidden from derivatives: an array's elements reached through a plain floating type
// (`(double*)PyArray_DATA(x)`) instead of the array's DTYPE macro. When libsection derives an
// op's gradient from its C code, the elements of the arrays that carry derivatives are dual
// numbers (a value and its derivatives), and such a cast would read them as garbage where no
// compiler can see it. The linter reports them (SL306) for an op meant to be differentiated;
// the linker refuses to derive a gradient through one that reaches such an array.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "section/codes.hpp"
#include "section/parse.hpp"

namespace section::detail {

/// One place an array's elements are reached through a plain floating type.
struct HiddenValue {
  SourceRange range;        ///< from the cast (or the declared type) to the accessor's name
  std::string type;         ///< the plain type as written: `double`, `npy_float64`, `long double`
  std::string accessor;     ///< `PyArray_DATA`, `PyArray_GETPTR1`, ... (`->data` for the field)
  std::string array;        ///< the first name in the accessor's argument (`x`, `INPUT_0`, `z` of
                            ///< `*z`); empty when there is none
  bool suppressed = false;  ///< its line has a `section-lint: ignore[SL306]` comment
};

/// The hidden values in the blocks of the nine section tags (other tags are not C).
std::vector<HiddenValue> find_hidden_values(SourceManager const& sm, std::span<Block const> blocks);

/// SL306 for `found`, saying what to write instead: `use_instead` (`DTYPE_INPUT_0`) when the
/// array is known, else the DTYPE macro of its input or output.
Diagnostic hidden_value_diagnostic(HiddenValue const& found, std::string const& use_instead = {});

/// SL306, for the code table.
std::span<LintRule const* const> hidden_value_rules();

}  // namespace section::detail
