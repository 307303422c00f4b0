// The plan of a batch: which dimensions of each input and output of an op are its core (a
// gufunc signature's), how the batch dimensions broadcast, and whether the op takes the whole
// batch itself. Made here, from a signature or from ranks; read by the runtime's batch loop
// (generate/batch.c) in the layout generate/batch_plan.h gives both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace section {

/// A gufunc signature, `"(m,n),(n)->(m)"`: each input's and output's core dimensions, names or
/// fixed lengths (`"3"`).
struct GufuncSignature {
  std::vector<std::vector<std::string>> inputs, outputs;
};

/// Reads a gufunc signature; throws `std::invalid_argument` (`not a gufunc signature: ...`,
/// saying where) for anything else.
GufuncSignature parse_gufunc_signature(std::string_view signature);

/// How an op runs a batch: its core dimensions (from a gufunc signature), which batch
/// dimensions of each input may broadcast at run time, and whether the op takes the whole batch
/// (`vmap_method = "broadcast_all"`) or runs once per row.
class BatchPlan {
 public:
  /// The plan of `signature` for the op `op_name`. `whole`: the op takes the whole batch.
  /// `masks`: per input, the batch dimensions (bit d for dimension d) that may broadcast
  /// (PyTensor's rule); none for NumPy's (any length-1 dimension). Throws
  /// `std::invalid_argument` for a bad signature, or masks that do not fit it.
  BatchPlan(std::string op_name, std::string const& signature, bool whole = false,
            std::optional<std::vector<std::uint64_t>> masks = std::nullopt);

  /// The plan of a batch already broadcast (JAX's): inputs and outputs of `in_ndims` and
  /// `out_ndims` core dimensions, each named apart.
  static BatchPlan of_ranks(std::string op_name, std::vector<int> const& in_ndims,
                            std::vector<int> const& out_ndims, bool whole = false);

  /// A plan given as its layout (`values`, `labels`: generate/batch_plan.h), checked; throws
  /// `std::invalid_argument` ("plan too short", ...) for one the runtime could misread.
  static BatchPlan from_layout(std::vector<long long> values, std::vector<std::string> labels);

  /// Throws `std::invalid_argument` unless the plan is for `n_inputs` inputs and `n_outputs`
  /// outputs.
  void check_counts(std::size_t n_inputs, std::size_t n_outputs) const;

  std::string const& op_name() const { return labels_.front(); }
  std::string const& signature() const { return labels_[1]; }
  std::size_t n_inputs() const { return n_inputs_; }
  std::size_t n_outputs() const { return n_outputs_; }
  bool whole() const;
  /// The layout the runtime reads (generate/batch_plan.h): the values and the labels.
  long long const* values() const { return values_.data(); }
  char const* const* labels() const { return label_pointers_.data(); }

  BatchPlan(BatchPlan const& other);
  BatchPlan& operator=(BatchPlan const&) = delete;

 private:
  BatchPlan() = default;
  void point_labels();

  std::vector<long long> values_;
  std::vector<std::string> labels_;
  std::vector<char const*> label_pointers_;  // into labels_
  std::size_t n_inputs_ = 0, n_outputs_ = 0;
};

}  // namespace section
