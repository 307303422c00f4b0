// Values hidden from derivatives: an array's elements reached through a plain floating type
// (`(double*)PyArray_DATA(x)`) instead of the array's DTYPE macro (SL306), and a float array
// made or converted with a fixed type number (`PyArray_EMPTY(1, dims, NPY_DOUBLE, 0)`,
// `PyArray_FROM_OTF(x, NPY_DOUBLE, ...)`) instead of its TYPENUM macro (SL307). When
// libsection derives an op's gradient from its C code, the elements of the arrays that carry
// derivatives are numbers that carry them (dual or taped numbers): such a cast would read them
// as garbage where no compiler can see it, an output made as float64 would be too small for
// them (the code would write past its end), and an input converted to float64 would fail (no
// cast drops derivatives). The linter reports them for an op meant to be differentiated; the
// linker refuses to derive a gradient through one that reaches such an array.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "section/codes.hpp"
#include "section/parse.hpp"

namespace section::detail {

/// One place an array's elements are reached through a plain floating type (SL306), or a float
/// array is made or converted with a fixed type number (SL307).
struct HiddenValue {
  enum class Kind {
    cast,       ///< SL306: `(double*)PyArray_DATA(x)`
    made,       ///< SL307: `*z = PyArray_EMPTY(1, dims, NPY_DOUBLE, 0)`
    converted,  ///< SL307: `PyArray_FROM_OTF(x, NPY_DOUBLE, flags)`
  };
  Kind kind = Kind::cast;
  SourceRange range;        ///< from the cast (or the declared type) to the accessor's name; the
                            ///< type number of SL307
  std::string type;         ///< the plain type as written: `double`, `npy_float64`, `long double`;
                            ///< the type number of SL307 (`NPY_DOUBLE`)
  std::string accessor;     ///< `PyArray_DATA`, `PyArray_GETPTR1`, ... (`->data` for the field);
                            ///< the function of SL307 (`PyArray_EMPTY`)
  std::string array;        ///< the first name in the accessor's argument (`x`, `INPUT_0`, `z` of
                            ///< `*z`); the array made (`z` of `*z = ...`) or converted (`x`) by
                            ///< SL307's call; empty when there is none
  bool suppressed = false;  ///< its line has a `section-lint: ignore[SL306]` (SL307) comment
};

/// The hidden values in the blocks of the nine section tags (other tags are not C).
std::vector<HiddenValue> find_hidden_values(SourceManager const& sm, std::span<Block const> blocks);

/// SL306 or SL307 for `found`, saying what to write instead: for `use_instead`, the DTYPE
/// macro of the array when it is known (`DTYPE_INPUT_0`; SL307 names its TYPENUM macro), else
/// the macro of its input or output.
Diagnostic hidden_value_diagnostic(HiddenValue const& found, std::string const& use_instead = {});

/// SL306 and SL307, for the code table.
std::span<LintRule const* const> hidden_value_rules();

}  // namespace section::detail
