// An op's derivatives from its own C code: a second op whose code runs the first's on numbers
// that carry derivatives: dual numbers of W tangents (forward mode, generate/dual.h) or taped
// numbers swept backwards (reverse mode, generate/tape.h). Its module is a module like any
// other (its own text, key and cache entry), built only when a derivative is asked for.
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
    /// computed it; outputs are the gradient of each `differentiated` input. Computed by
    /// `method`: in forward mode the op's code runs once per `width` differentiated scalars
    /// (each pass seeds `width` unit tangents) and the outputs' tangents are contracted with
    /// the cotangents; in reverse mode it runs once on taped numbers, the outputs' adjoints are
    /// seeded with the cotangents and the tape is swept back. Either way the outputs' values
    /// are checked against the op's own (they differ only where the code handles the numbers
    /// as plain floats: refused, never a wrong gradient).
    pullback,
    /// The Jacobian-vector product: inputs are the op's inputs, then the tangent of each
    /// `differentiated` input, then the value of each float output as the op's own module
    /// computed it; outputs are the tangent of each float output. One pass, `width` 1, whose
    /// values are checked against the op's own as a pullback's are.
    pushforward,
    /// The op's values, computed so that a pullback of the same function need not run the op
    /// again: inputs and outputs are the op's own. Where the pullback will take reverse mode
    /// (as `automatic` decides from the differentiated scalars and the settings), the code
    /// runs once on taped numbers and the tape is left in the runtime's recordings, keyed by
    /// the op's taped code and the inputs' bytes, for the pullback to sweep; else it runs the
    /// op's code on plain numbers, as its own module does. A pullback that finds no recording
    /// of its inputs runs its own taped pass: a recording saves time, never decides a value.
    record,
  };
  Mode mode = Mode::pullback;
  /// How a pullback is computed: the module holds the op's code compiled for each mode the
  /// method may run.
  enum class Method {
    /// Both compiles; each call picks by the number P of differentiated scalars: forward
    /// passes up to `reverse_above(width)`, reverse mode above, and forward passes again when
    /// the tape would outgrow LIBSECTION_TAPE_MAX_BYTES. LIBSECTION_DERIVATIVE_MODE=forward or
    /// `reverse` forces one (reverse then fails, naming the op, its files and the limit, where
    /// the tape would outgrow it).
    automatic,
    /// Forward passes only (the code on dual numbers).
    forward,
    /// Reverse mode only (the code on taped numbers): an error where the tape outgrows its
    /// limit.
    reverse,
  };
  Method method = Method::automatic;
  /// Per input of the op: whether it carries derivatives (a float32 or float64 array or
  /// number). The others stay as they are.
  std::vector<bool> differentiated;
  /// Per output of the op (pullback): whether its cotangent is an input. Only float32 and
  /// float64 outputs may have one; every float output computes with duals.
  std::vector<bool> cotangents;
  /// The op's output types (the derivative op's own outputs are others).
  std::vector<CTypePtr> outputs;
  /// Tangents per forward pass: 1 to `max_width`.
  int width = 1;
};

/// The most tangents one pass carries.
inline constexpr int max_width = 64;

/// The number of differentiated scalars above which an automatic pullback runs in reverse
/// mode, for forward passes of `width` tangents (measured: bench/bench_gradient.py).
int reverse_above(int width);

/// The derivative op of `forward`, whose code (`COp::generate`) is asked with the element
/// macros of the differentiated inputs and float outputs naming dual or taped numbers, once
/// for each (in a namespace of its own, its struct sections a struct that each pass starts
/// afresh). Always C++.
/// Throws `std::invalid_argument` for a spec that does not fit (sizes, a width out of range)
/// and, when a module is generated, `LinkError` for an input it marks that is not float32 or
/// float64.
COpPtr make_derivative_op(COpPtr forward, DerivativeSpec spec);

/// The text every differentiated module's support code starts with: the numbers, their
/// dtypes and the drivers (generate/derivative_rules.h, dual.h, tape.h, number_dtype.h,
/// driver.h, forward_driver.h, reverse_driver.h).
std::string const& derivative_header();

}  // namespace section
