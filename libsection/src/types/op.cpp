// The node context PyTensor's CLinker gives a single-node graph.
#include "section/op.hpp"

#include <stdexcept>

#include "base/text.hpp"

namespace section {

std::string_view language_name(Language language) { return language == Language::c ? "c" : "c++"; }

Language parse_language(std::string_view text, std::string const& owner) {
  if (text == "c") return Language::c;
  if (text == "c++") return Language::cxx;
  throw std::invalid_argument(owner + ": language is \"" + bounded_quote(text, 40) +
                              "\"; give \"c++\" (the default) or \"c\"");
}

NodeContext single_node_context(OpDescription const& op) {
  static std::vector<TypeSpec> const none;
  auto const& inputs = op.inputs ? *op.inputs : none;
  auto const& outputs = op.outputs ? *op.outputs : none;
  NodeContext node;
  node.node_name = "node_<<<<HASH_PLACEHOLDER>>>>_0";
  // CLinker numbers variables in its DFS order from the outputs (last output first, then the
  // inputs from last to first), two ids per variable: V1, V3, ...
  int const variables = static_cast<int>(inputs.size() + outputs.size());
  auto symbol = [](int position_from_end) {
    return "V" + std::to_string(2 * position_from_end + 1);
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    node.input_dtypes.push_back(inputs[i].dtype_name());
    node.inputs.push_back(symbol(variables - 1 - static_cast<int>(i)));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    node.output_dtypes.push_back(outputs[i].dtype_name());
    node.outputs.push_back(symbol(static_cast<int>(outputs.size() - 1 - i)));
  }
  int next_id = 2 * variables + 1;
  if (op.has_params) {
    node.sub["params"] = node.init_sub["params"] = "V" + std::to_string(next_id);
    next_id += 2;
  }
  node.sub["fail"] = pytensor_failure_code(next_id);
  node.init_sub["fail"] = pytensor_failure_code_init(next_id);  // the run id, as the reference
  return node;
}

}  // namespace section
