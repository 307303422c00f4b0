// Apply signatures written as strings (`float64[:],float64[:]`), for the tools and `build()`.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "section/dtype.hpp"

namespace section {

/// One variable type in signature syntax: a tensor `float64[:]` / `float32[:,:]`, a scalar
/// `int64`, or `object` (a generic Python object: no dtype).
struct TypeSpec {
  enum class Kind { tensor, scalar, generic };
  Kind kind = Kind::generic;
  std::string dtype;  ///< empty for `object`
  int ndim = 0;       ///< tensors only

  /// The dtype the expander sees; nothing for `object`.
  std::optional<std::string> dtype_name() const;
  /// PyTensor 3's `str()` of the type (`Vector(float64, shape=(?,))`, `int64`, `Generic`),
  /// which the `ParamsType` struct name hashes.
  std::string pytensor_str() const;
  /// `c_element_type()` of the PyTensor type: `npy_<dtype>`, empty for `object`.
  std::string c_element_type() const;
  /// Back to signature syntax.
  std::string to_string() const;
};

/// A params field written `name:type`.
struct NamedType {
  std::string name;
  TypeSpec type;
};

/// One field of an op's `ParamsType`.
struct ParamField {
  std::string name;
  std::string c_element_type;  ///< `npy_int64`; empty when the type has none (no `DTYPE_PARAM_`)
};

/// The op's params, when it has a `ParamsType`.
struct ParamsSpec {
  std::string type_name;           ///< the `PARAMS_TYPE` value (the params struct's C name)
  std::vector<ParamField> fields;  ///< sorted by name, as `ParamsType` sorts them
};

/// A signature string that cannot be read; the message names the item and the character.
class signature_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Parses one type (`float64[:]`). Throws `signature_error`.
TypeSpec parse_type(std::string_view text);

/// Parses a comma-separated list of types; `role` (`input`, `output`) names the items in
/// errors, e.g. "output 2 `float64[:`: expected `]` at character 19 of `...`". An empty or
/// blank string is an empty list. Throws `signature_error`.
std::vector<TypeSpec> parse_type_list(std::string_view text, std::string_view role);

/// Parses a list of separate type strings (`build()`'s `inputs`); `role` (`inputs`, `outputs`)
/// names each item in errors as `inputs[1]: type ...`. Throws `signature_error`.
std::vector<TypeSpec> parse_type_strings(std::vector<std::string> const& texts,
                                         std::string_view role);

/// Parses params fields `k:int64,a:float64[:]`. Throws `signature_error` (also on a repeated
/// or non-identifier name).
std::vector<NamedType> parse_params(std::string_view text);

/// Parses params fields given as (name, type string) pairs (`build()`'s `params`); errors name
/// the field as `params[k]: type ...`. The names are checked by `ParamsType`/`params_spec`.
/// Throws `signature_error`.
std::vector<NamedType> parse_param_strings(
    std::vector<std::pair<std::string, std::string>> const& fields);

/// The `ParamsType` PyTensor builds from these fields: sorted by name, struct name
/// `_Params_<sha256(names)>_<sha256(type strings)>`. Throws `signature_error` for a name that
/// is not a C identifier or appears twice.
ParamsSpec params_spec(std::vector<NamedType> fields);

/// PyTensor's `failure_code(sub)`: the `FAIL` of `c_code`/`c_code_cleanup` for run id `id`.
std::string pytensor_failure_code(int id);
/// PyTensor's `failure_code_init(sub)`: the `FAIL` of `c_init_code_struct` (returns `id`).
std::string pytensor_failure_code_init(int id);

}  // namespace section
