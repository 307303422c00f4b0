// A graph of applies: its variables checked as they are added (labels and op names reach the
// module's text, so they go through the name validator).
#include "section/linker/generate/graph.hpp"

#include <algorithm>
#include <stdexcept>

#include "section/names.hpp"

namespace section {

std::size_t Graph::add_variable(CTypePtr type, Role role, std::string label) {
  if (!type) throw std::invalid_argument("a graph variable needs a type");
  variables_.push_back({std::move(type), role, std::move(label)});
  return variables_.size() - 1;
}

std::size_t Graph::add_input(CTypePtr type, std::string label) {
  if (!label.empty()) check_display_name(label, "input label");  // shown in C string literals
  auto const v = add_variable(std::move(type), Role::input, std::move(label));
  inputs_.push_back(v);
  return v;
}

std::size_t Graph::add_constant(CTypePtr type, std::string label) {
  if (!label.empty()) check_display_name(label, "constant label");
  auto const v = add_variable(std::move(type), Role::constant, std::move(label));
  constants_.push_back(v);
  return v;
}

std::vector<std::size_t> Graph::add_apply(COpPtr op, std::vector<std::size_t> inputs,
                                          std::vector<CTypePtr> output_types,
                                          std::optional<std::size_t> params) {
  if (!op) throw std::invalid_argument("an apply needs an op");
  check_display_name(op->name(), "op name");  // it is written into the module's comments
  for (auto v : inputs)
    if (v >= variables_.size())
      throw std::invalid_argument("apply of " + op->name() + ": input variable " +
                                  std::to_string(v) + " does not exist");
  if (params && (*params >= variables_.size() || variables_[*params].role != Role::constant))
    throw std::invalid_argument("apply of " + op->name() + ": params must be a constant variable");
  std::vector<std::size_t> outputs;
  for (std::size_t i = 0; i < output_types.size(); ++i)
    outputs.push_back(add_variable(std::move(output_types[i]), Role::intermediate,
                                   op->name() + " output " + std::to_string(i)));
  applies_.push_back({std::move(op), std::move(inputs), outputs, params});
  return outputs;
}

void Graph::add_output(std::size_t variable) {
  if (variable >= variables_.size())
    throw std::invalid_argument("output variable " + std::to_string(variable) + " does not exist");
  if (variables_[variable].role != Role::intermediate)
    throw std::invalid_argument("only outputs of applies can be function outputs");
  if (std::find(outputs_.begin(), outputs_.end(), variable) != outputs_.end())
    throw std::invalid_argument("variable " + std::to_string(variable) + " is already an output");
  outputs_.push_back(variable);
}

}  // namespace section
