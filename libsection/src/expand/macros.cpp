// The reference `ExternalCOp` macro blocks, byte for byte.
#include "expand/macros.hpp"

#include <utility>

namespace section::detail {
namespace {

/// Collects define/undef pairs and joins each side with newlines, as the reference does.
class MacroBuilder {
 public:
  void add(std::string const& name, std::string const& value) {
    add_raw("#define " + name + " " + value, name);
  }
  /// `name` may carry a parameter list (`APPLY_SPECIFIC(str)`); `#undef` takes the bare name.
  void add_raw(std::string const& define_line, std::string const& undef_name) {
    append(block_.defines, define_line);
    append(block_.undefs, "#undef " + undef_name);
  }
  MacroBlock take() { return std::move(block_); }

 private:
  static void append(std::string& side, std::string const& line) {
    if (!side.empty()) side += '\n';
    side += line;
  }

  MacroBlock block_;
};

void add_dtype_macros(MacroBuilder& macros, std::string const& variable,
                      std::optional<std::string> const& dtype, NodeContext const& node) {
  if (!dtype) return;  // no dtype (generic, ...): no macros, but the index is still used
  if (auto element = node.elements.find(variable); element != node.elements.end()) {
    macros.add("DTYPE_" + variable, element->second.c_type);
    macros.add("TYPENUM_" + variable, element->second.typenum);
    macros.add("ITEMSIZE_" + variable, element->second.itemsize);
    return;
  }
  auto info = dtype_info(*dtype);
  macros.add("DTYPE_" + variable, info->c_type);
  macros.add("TYPENUM_" + variable, std::to_string(info->typenum));
  macros.add("ITEMSIZE_" + variable, std::to_string(info->itemsize));
}

/// Every `\n` becomes ` \` + newline, so a multi-line failure code stays one macro.
std::string line_continued(std::string const& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\n') out += " \\";
    out += c;
  }
  return out;
}

}  // namespace

MacroBlock apply_macros(OpDescription const& op, NodeContext const& node, bool check_input) {
  MacroBuilder macros;
  if (check_input) {
    for (std::size_t i = 0; i < node.input_dtypes.size(); ++i) {
      add_dtype_macros(macros, "INPUT_" + std::to_string(i), node.input_dtypes[i], node);
    }
    for (std::size_t i = 0; i < node.output_dtypes.size(); ++i) {
      add_dtype_macros(macros, "OUTPUT_" + std::to_string(i), node.output_dtypes[i], node);
    }
  }
  macros.add_raw("#define APPLY_SPECIFIC(str) str##_" + node.node_name, "APPLY_SPECIFIC");
  if (op.params) {
    macros.add("PARAMS_TYPE", op.params->type_name);
    for (ParamField const& field : op.params->fields) {
      if (!field.c_element_type.empty()) {
        macros.add("DTYPE_PARAM_" + field.name, field.c_element_type);
      }
    }
  }
  return macros.take();
}

MacroBlock sub_macros(Sub const& sub) {
  MacroBuilder macros;
  macros.add("FAIL", line_continued(sub_value(sub, "fail")));
  std::string const params_name = sub_value(sub, "params");
  if (!params_name.empty()) macros.add("PARAMS", params_name);
  return macros.take();
}

MacroBlock io_macros(std::vector<std::string> const& inputs,
                     std::vector<std::string> const& outputs) {
  MacroBuilder macros;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    macros.add("INPUT_" + std::to_string(i), inputs[i]);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    macros.add("OUTPUT_" + std::to_string(i), outputs[i]);
  }
  return macros.take();
}

std::string function_arguments(OpDescription const& op, NodeContext const& node) {
  std::vector<std::string> arguments = node.inputs;
  for (int i = static_cast<int>(node.inputs.size()); i < op.num_inputs.value_or(0); ++i) {
    arguments.push_back("NULL");
  }
  for (std::string const& output : node.outputs) arguments.push_back("&" + output);
  for (int i = static_cast<int>(node.outputs.size()); i < op.num_outputs.value_or(0); ++i) {
    arguments.push_back("NULL");
  }
  std::string joined;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (i > 0) joined += ", ";
    joined += arguments[i];
  }
  return joined;
}

}  // namespace section::detail
