// The plan of a batch: a gufunc signature read, and laid out as the runtime's batch loop reads
// it (batch_plan.h).
#include "section/linker/generate/batch_plan.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

extern "C" {
#include "linker/generate/batch_plan.h"
}

namespace section {
namespace {

std::invalid_argument not_a_signature(std::string_view signature, std::string const& why) {
  return std::invalid_argument("not a gufunc signature: '" + std::string(signature) + "' (" + why +
                               ")");
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

/// A dimension: a C identifier (a name) or digits (a fixed length).
bool is_dimension(std::string_view d) {
  if (d.empty()) return false;
  if (std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; })) return true;
  auto const word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return !(d.front() >= '0' && d.front() <= '9') && std::all_of(d.begin(), d.end(), word);
}

/// The arguments of one side of a signature: `(m,n),(n)`.
std::vector<std::vector<std::string>> arguments(std::string_view text, std::string_view signature) {
  std::vector<std::vector<std::string>> out;
  std::size_t at = 0;
  auto rest = [&] { return "at '" + std::string(text.substr(at)) + "'"; };
  while (at < text.size()) {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    if (at >= text.size() || text[at] != '(') throw not_a_signature(signature, rest());
    std::size_t const close = text.find(')', at);
    std::size_t const nested = text.find('(', at + 1);
    if (close == std::string_view::npos || (nested != std::string_view::npos && nested < close))
      throw not_a_signature(signature, rest());
    std::string_view const inside = trimmed(text.substr(at + 1, close - at - 1));
    std::vector<std::string> dims;
    for (std::size_t begin = 0; !inside.empty() && begin <= inside.size();) {
      std::size_t const comma = std::min(inside.find(',', begin), inside.size());
      std::string_view const d = trimmed(inside.substr(begin, comma - begin));
      if (!is_dimension(d))
        throw not_a_signature(
            signature, "dimension '" + std::string(inside.substr(begin, comma - begin)) + "'");
      dims.emplace_back(d);
      begin = comma + 1;
    }
    out.push_back(std::move(dims));
    at = close + 1;
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    if (at < text.size()) {
      if (text[at] != ',') throw not_a_signature(signature, rest());
      ++at;
    }
  }
  return out;
}

}  // namespace

GufuncSignature parse_gufunc_signature(std::string_view signature) {
  std::size_t const arrow = signature.find("->");
  if (arrow == std::string_view::npos || signature.find("->", arrow + 2) != std::string_view::npos)
    throw not_a_signature(signature, "it needs one '->'");
  GufuncSignature out;
  out.outputs = arguments(signature.substr(arrow + 2), signature);
  if (out.outputs.empty()) throw not_a_signature(signature, "no outputs");
  out.inputs = arguments(signature.substr(0, arrow), signature);
  return out;
}

BatchPlan::BatchPlan(std::string op_name, std::string const& signature, bool whole,
                     std::optional<std::vector<std::uint64_t>> masks) {
  GufuncSignature const parsed = parse_gufunc_signature(signature);
  if (masks && masks->size() != parsed.inputs.size())
    throw std::invalid_argument("a batch plan of " + std::to_string(parsed.inputs.size()) +
                                " inputs given " + std::to_string(masks->size()) + " masks");
  labels_ = {std::move(op_name), signature};
  std::vector<std::string> names;
  auto dimension = [&](std::string const& d) -> long long {
    if (d.front() >= '0' && d.front() <= '9') return -(std::stoll(d) + 1);
    auto const found = std::find(names.begin(), names.end(), d);
    if (found != names.end()) return found - names.begin();
    names.push_back(d);
    return static_cast<long long>(names.size()) - 1;
  };
  std::vector<long long> body;
  for (std::size_t i = 0; i < parsed.inputs.size(); ++i) {
    body.push_back(static_cast<long long>(parsed.inputs[i].size()));
    for (auto const& d : parsed.inputs[i]) body.push_back(dimension(d));
    body.push_back(masks ? static_cast<long long>((*masks)[i]) : 0);
  }
  for (auto const& dims : parsed.outputs) {
    body.push_back(static_cast<long long>(dims.size()));
    for (auto const& d : dims) body.push_back(dimension(d));
  }
  long long const flags =
      (whole ? LIBSECTION_BATCH_WHOLE : 0) | (masks ? LIBSECTION_BATCH_STRICT : 0);
  values_ = {flags, static_cast<long long>(names.size())};
  values_.insert(values_.end(), body.begin(), body.end());
  labels_.insert(labels_.end(), names.begin(), names.end());
  n_inputs_ = parsed.inputs.size();
  n_outputs_ = parsed.outputs.size();
  if (names.size() > LIBSECTION_BATCH_MAX || n_inputs_ + n_outputs_ > LIBSECTION_BATCH_MAX)
    throw std::invalid_argument("a batch plan of more than 64 dimension names, or of more than "
                                "64 inputs and outputs");
  point_labels();
}

BatchPlan BatchPlan::of_ranks(std::string op_name, std::vector<int> const& in_ndims,
                              std::vector<int> const& out_ndims, bool whole) {
  int counter = 0;
  auto argument = [&](int n) {
    std::string s = "(";
    for (int k = 0; k < n; ++k) s += (k ? ",d" : "d") + std::to_string(counter++);
    return s + ")";
  };
  std::string signature;
  for (std::size_t i = 0; i < in_ndims.size(); ++i)
    signature += (i ? "," : "") + argument(in_ndims[i]);
  signature += "->";
  for (std::size_t j = 0; j < out_ndims.size(); ++j)
    signature += (j ? "," : "") + argument(out_ndims[j]);
  return BatchPlan(std::move(op_name), signature, whole);
}

BatchPlan BatchPlan::from_layout(std::vector<long long> values, std::vector<std::string> labels) {
  auto bad = [](std::string const& why) { return std::invalid_argument("plan " + why); };
  if (values.size() < LIBSECTION_BATCH_CELLS) throw bad("too short");
  if (labels.size() < 2) throw bad("has no op name and signature");
  long long const names = values[LIBSECTION_BATCH_NAMES];
  if (names < 0 || names > LIBSECTION_BATCH_MAX ||
      labels.size() != static_cast<std::size_t>(2 + names))
    throw bad("and labels disagree on the dimension names");
  BatchPlan plan;
  plan.values_ = std::move(values);
  plan.labels_ = std::move(labels);
  plan.point_labels();
  return plan;
}

void BatchPlan::check_counts(std::size_t n_inputs, std::size_t n_outputs) const {
  auto bad = [](std::string const& why) { return std::invalid_argument("plan " + why); };
  long long const names = values_[LIBSECTION_BATCH_NAMES];
  std::size_t at = LIBSECTION_BATCH_CELLS;
  for (std::size_t c = 0; c < n_inputs + n_outputs; ++c) {
    if (at >= values_.size()) throw bad("too short");
    if (values_[at] < 0 || values_[at] > LIBSECTION_BATCH_MAX) throw bad("has a bad core ndim");
    std::size_t const end = at + 1 + static_cast<std::size_t>(values_[at]);
    if (end > values_.size()) throw bad("too short");
    for (std::size_t k = at + 1; k < end; ++k)
      if (values_[k] >= names) throw bad("names a dimension it does not have");
    at = end + (c < n_inputs ? 1 : 0);  // an input's broadcast mask
  }
  if (at != values_.size()) throw bad("too long");
}

bool BatchPlan::whole() const { return values_[LIBSECTION_BATCH_FLAGS] & LIBSECTION_BATCH_WHOLE; }

BatchPlan::BatchPlan(BatchPlan const& other)
    : values_(other.values_), labels_(other.labels_), n_inputs_(other.n_inputs_),
      n_outputs_(other.n_outputs_) {
  point_labels();
}

void BatchPlan::point_labels() {
  label_pointers_.clear();
  for (auto const& label : labels_) label_pointers_.push_back(label.c_str());
}

}  // namespace section
