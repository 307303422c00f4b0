// What an op is, and what one application of it (a node) gives its code: the two descriptions the
// expander, the linker, the linter, the tools and the bindings share.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "section/ctype.hpp"
#include "section/signature.hpp"

namespace section {

/// The language an op's code is written in. C++ by default (what PyTensor compiles); an op
/// declared C may be compiled as C, never switched to it silently.
enum class Language { cxx, c };

/// `"c++"` or `"c"`, as users spell the declaration.
std::string_view language_name(Language language);

/// The language `text` declares (`"c"` or `"c++"`); throws `std::invalid_argument` naming
/// `owner` (the op) and the accepted values for anything else.
Language parse_language(std::string_view text, std::string const& owner);

/// What an op is, whatever node it is applied to (its sections come with it, loaded apart).
struct OpDescription {
  std::string name = "SectionOp";        ///< shown in the generated module and in messages
  std::optional<std::string> func_name;  ///< the main function; none: a `code` section
  std::optional<int> num_inputs;         ///< `_cop_num_inputs`: the call is padded to it
  std::optional<int> num_outputs;        ///< `_cop_num_outputs`
  bool check_input = true;               ///< `DTYPE_`/`TYPENUM_`/`ITEMSIZE_` macros
  /// The op takes a params argument (`params_type` is set); `params` describes it when it is a
  /// `ParamsType` (a PyTensor op may have another params type: `PARAMS` but no `PARAMS_TYPE`).
  bool has_params = false;
  std::optional<ParamsSpec> params;
  /// The op's one signature, when it has one (the tools' `--inputs`/`--outputs`, `build()`);
  /// nothing when each node brings its own types (PyTensor).
  std::optional<std::vector<TypeSpec>> inputs, outputs;
  /// What its sections are written in (`language = "c"`): a C op's files are checked as C
  /// (SL208, SL209) and its module is compiled as C.
  Language language = Language::cxx;
  /// Its gradient is derived from its C code (a differentiated module): the linter reports
  /// values hidden from derivatives (SL306).
  bool differentiated = false;
  /// Its code may run without the GIL where the linker sees that is safe (`release_gil`).
  bool release_gil = true;
};

/// What the `DTYPE_`, `TYPENUM_` and `ITEMSIZE_` macros of a variable expand to, where its
/// code holds another element than its dtype's (a differentiated module's dual numbers).
struct ElementMacros {
  std::string c_type;    ///< `DTYPE_INPUT_0`
  std::string typenum;   ///< `TYPENUM_INPUT_0`: a C expression (a registered dtype's number)
  std::string itemsize;  ///< `ITEMSIZE_INPUT_0`
};

/// One application of an op: the names and types its code sees, as the reference `c_*(node,
/// name, inputs, outputs, sub)` methods get them.
struct NodeContext {
  std::string node_name;             ///< `name`; `APPLY_SPECIFIC` appends it: unique per module
  std::vector<std::string> inputs;   ///< C names of the input variables (`V5`)
  std::vector<std::string> outputs;  ///< C names of the output variables (`V1`)
  std::vector<std::optional<std::string>> input_dtypes;  ///< nullopt: no dtype (`object`, ...)
  std::vector<std::optional<std::string>> output_dtypes;
  /// The linker's types of the inputs and outputs (empty where only dtypes are known).
  std::vector<CType const*> input_types, output_types;
  /// `sub` of `c_code`/`c_code_cleanup`: `fail` (the failure code), `params` (the params
  /// variable, when the op has one), and the linker's `id` and `failure_var`.
  Sub sub;
  Sub init_sub;  ///< `sub` of `c_init_code_struct`: `fail` (returns the id), `params`, `id`
  /// The call's argument list when the op overrides `format_c_function_args` (Theano's cuDNN
  /// RNN ops pass NULL for an optional input); nullopt: inputs, `&`outputs and the padding.
  std::optional<std::string> function_args;
  /// The `#define`s and `#undef`s of the apply macros when the op overrides `get_c_macros`
  /// (its result for the node), in place of the generated ones; `call_macros` are its result
  /// with `check_input=False`, around the `func_name` call. nullopt: the generated macros.
  std::optional<std::pair<std::string, std::string>> macros, call_macros;
  /// Variables (`INPUT_0`, `OUTPUT_1`) whose element macros are not their dtype's; empty in
  /// every module but a differentiated one.
  std::map<std::string, ElementMacros> elements;
};

/// The context PyTensor's `CLinker` gives the only node of a single-node graph of `op` (its
/// `inputs` and `outputs`; none: no variables): node name `node_<<<<HASH_PLACEHOLDER>>>>_0`,
/// variables `V1, V3, ...` numbered from the last output back to the first input, then the
/// params constant when `op.has_params`, then the run id.
NodeContext single_node_context(OpDescription const& op);

}  // namespace section
