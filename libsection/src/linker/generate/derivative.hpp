// The derivative op's parts (section/linker/generate/derivative.hpp): the op and its code
// (derivative.cpp) and the driver that code runs (derivative_driver.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "section/linker/generate/derivative.hpp"

namespace section::derivative {

bool is_float(std::optional<std::string> const& dtype);

/// How many of `flags` are set (differentiated inputs, outputs with a cotangent).
std::size_t count_set(std::vector<bool> const& flags);

struct Variable;
/// `vars` as the node's own variables (`names`, the node context's), none carrying derivatives:
/// what a plain pass of the op's code runs on.
std::vector<Variable> plain(std::vector<Variable> vars, std::vector<std::string> const& names);

/// One compile of the op's code in the derivative's module: on dual numbers of `width`
/// tangents (forward mode) or on taped numbers (reverse mode), in namespace `space` + the
/// apply's id.
struct Numbers {
  bool taped = false;
  int width = 1;
  std::string space;
  /// The op's code on its own numbers (a record op's pass when no pullback will sweep a tape).
  bool plain = false;
  /// The number type of a float32 or float64 element (`libsection_dual_float64_4`).
  std::string type(std::string const& dtype) const;
  std::string itemsize(std::string const& dtype) const;
};

/// One variable of the op as the driver holds it.
struct Variable {
  std::string name;  ///< what the driver hands the op's code (`lsd_in_0`, or the input itself)
  CType const* type = nullptr;
  std::optional<std::string> dtype;
  bool dual = false;   ///< its elements carry derivatives (dual or taped numbers)
  bool array = false;  ///< held through a pointer
  /// What the op's code calls input i and output j (the parameters of `lsd_state::pass`).
  static std::string inner_input(std::size_t i) { return "lsd_in_" + std::to_string(i); }
  static std::string inner_output(std::size_t j) { return "lsd_out_" + std::to_string(j); }
};

class DerivativeOp final : public COp {
 public:
  DerivativeOp(COpPtr forward, DerivativeSpec spec);
  std::string name() const override;
  Language language() const override { return Language::cxx; }
  bool may_release_gil() const override { return forward_->may_release_gil(); }
  OpCode generate(NodeContext const& ctx) const override;

 private:
  bool pullback() const { return spec_.mode == DerivativeSpec::Mode::pullback; }
  bool record() const { return spec_.mode == DerivativeSpec::Mode::record; }
  // Whether the module holds the op's code on dual (false) or taped (true) numbers.
  bool has(bool taped) const {
    for (auto const& k : kinds_)
      if (k.taped == taped && !k.plain) return true;
    return false;
  }
  Numbers const& kind(bool taped) const {
    for (auto const& k : kinds_)
      if (k.taped == taped && !k.plain) return k;
    return kinds_.front();
  }
  std::vector<Variable> variables(NodeContext const& ctx, bool inputs) const;
  std::pair<std::vector<Variable>, std::vector<Variable>> checked_variables(
      NodeContext const& ctx) const;
  std::string struct_members(std::string const& id) const;
  NodeContext inner_context(NodeContext const& ctx, std::vector<Variable> const& in,
                            std::vector<Variable> const& out, Numbers const& kind) const;
  std::size_t float_outputs() const;
  std::string where(std::string const& what) const;
  std::string recording_identity(NodeContext const& ctx, std::vector<Variable> const& in,
                                 std::vector<Variable> const& out) const;

  // ---- the driver (derivative_driver.cpp)
  std::string driver(NodeContext const& ctx, std::vector<Variable> const& in,
                     std::vector<Variable> const& out, std::string const& files,
                     std::string const& identity) const;
  std::string forward_block(NodeContext const& ctx, std::vector<Variable> const& in,
                            std::vector<Variable> const& out) const;
  std::string reverse_block(NodeContext const& ctx, std::vector<Variable> const& in,
                            std::vector<Variable> const& out, std::string const& files,
                            std::string const& identity) const;
  std::string record_driver(NodeContext const& ctx, std::vector<Variable> const& in,
                            std::vector<Variable> const& out, std::string const& identity) const;
  std::string fingerprint(NodeContext const& ctx, std::vector<Variable> const& in) const;
  std::string declare(NodeContext const& ctx, std::vector<Variable> const& in,
                      std::vector<Variable> const& out, Numbers const& kind) const;
  std::string fill(NodeContext const& ctx, std::vector<Variable> const& in,
                   Numbers const& kind) const;
  std::string pass(NodeContext const& ctx, std::vector<Variable> const& in,
                   std::vector<Variable> const& out, Numbers const& kind) const;
  std::string own_pass(NodeContext const& ctx, std::vector<Variable> const& in,
                       std::vector<Variable> const& out) const;
  std::string pass_arguments(NodeContext const& ctx, std::vector<Variable> const& in,
                             std::vector<Variable> const& out) const;
  std::string contraction(NodeContext const& ctx, std::vector<Variable> const& out) const;
  std::string seeds(NodeContext const& ctx, std::vector<Variable> const& out,
                    std::string const& forced) const;
  std::string checked_values(NodeContext const& ctx, std::vector<Variable> const& out,
                             Numbers const& kind) const;
  std::string check_value(Variable const& out, std::size_t j, std::string const& expected,
                          Numbers const& kind, std::string const& on_fail) const;
  std::string results(NodeContext const& ctx, std::vector<Variable> const& in,
                      std::vector<Variable> const& out) const;
  std::string scalar_count(NodeContext const& ctx, std::vector<Variable> const& in) const;

  COpPtr forward_;
  DerivativeSpec spec_;
  std::vector<Numbers> kinds_;  // the compiles of the op's code its module holds
};

}  // namespace section::derivative
