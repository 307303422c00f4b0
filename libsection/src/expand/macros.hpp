// Internal: the `#define`/`#undef` blocks PyTensor's `ExternalCOp` wraps around each section
// (`get_c_macros`, `get_sub_macros`, `get_io_macros`) and its main function's argument list.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "section/expand.hpp"

namespace section::detail {

/// Matching `#define` and `#undef` lines, each joined with `\n` (no leading or trailing newline).
struct MacroBlock {
  std::string defines;
  std::string undefs;
};

/// `get_c_macros`: DTYPE_/TYPENUM_/ITEMSIZE_ per input then output (when `check_input`),
/// `APPLY_SPECIFIC`, then `PARAMS_TYPE` and `DTYPE_PARAM_*`. Dtypes must be known.
MacroBlock apply_macros(OpDescription const& op, NodeContext const& node, bool check_input);

/// `get_sub_macros`: `FAIL` (multi-line failure code continued with ` \`), then `PARAMS`.
MacroBlock sub_macros(Sub const& sub);

/// `get_io_macros`: `INPUT_i`, then `OUTPUT_i`.
MacroBlock io_macros(std::vector<std::string> const& inputs,
                     std::vector<std::string> const& outputs);

/// `format_c_function_args`: inputs, then `&output`s, each padded with `NULL` to its count.
std::string function_arguments(OpDescription const& op, NodeContext const& node);

/// The `func_name` a line of generated code calls when it is the statement of `c_code` calling
/// an op's main function (`if (APPLY_SPECIFIC(f)(V1, &V2) != 0) {`); nothing for another line.
std::optional<std::string> called_main_function(std::string_view line);

}  // namespace section::detail
