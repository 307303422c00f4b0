// An op's derivatives from its own C code: a second op whose code runs the first's on dual
// numbers (generate/dual.h), forward mode with W tangents per pass. Its module is a module like
// any other (its own text, key and cache entry), built only when a derivative is asked for.
#pragma once

#include <string>
#include <vector>

#include "section/ctype.hpp"
#include "section/linker/generate/graph.hpp"

namespace section {

/// What the derivative op of an op computes, and from which of its inputs and outputs.
struct DerivativeSpec {
  enum class Mode {
    /// The vector-Jacobian product: inputs are the op's inputs, then the cotangent of each
    /// output with `cotangents`, then the value of each of those outputs as the op's own module
    /// computed it; outputs are the gradient of each `differentiated` input. It runs the op's
    /// code once per `width` differentiated scalars (each pass seeds `width` unit tangents),
    /// checks the outputs' values against the op's own (they differ only where the code
    /// handles dual numbers as plain floats: refused, never a wrong gradient) and contracts the
    /// outputs' tangents with the cotangents.
    pullback,
    /// The Jacobian-vector product: inputs are the op's inputs, then the tangent of each
    /// `differentiated` input, then the value of each float output as the op's own module
    /// computed it; outputs are the tangent of each float output. One pass, `width` 1, whose
    /// values are checked against the op's own as a pullback's are.
    pushforward,
  };
  Mode mode = Mode::pullback;
  /// Per input of the op: whether it carries derivatives (a float32 or float64 array or
  /// number). The others stay as they are.
  std::vector<bool> differentiated;
  /// Per output of the op (pullback): whether its cotangent is an input. Only float32 and
  /// float64 outputs may have one; every float output computes with duals.
  std::vector<bool> cotangents;
  /// The op's output types (the derivative op's own outputs are others).
  std::vector<CTypePtr> outputs;
  /// Tangents per pass: 1 to `max_width`.
  int width = 1;
};

/// The most tangents one pass carries.
inline constexpr int max_width = 64;

/// The derivative op of `forward`, whose code (`COp::generate`) is asked with the element
/// macros of the differentiated inputs and float outputs naming dual numbers. Always C++.
/// Throws `std::invalid_argument` for a spec that does not fit (sizes, a width out of range)
/// and, when a module is generated, `LinkError` for an input it marks that is not float32 or
/// float64.
COpPtr make_derivative_op(COpPtr forward, DerivativeSpec spec);

/// The text every differentiated module's support code starts with (generate/dual.h).
extern char const* const dual_header;

}  // namespace section
