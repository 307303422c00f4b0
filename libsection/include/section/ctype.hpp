// The CType interface: how a value crosses between Python and the C code of a compiled module.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "section/dtype.hpp"
#include "section/signature.hpp"

namespace section {

/// The reference's `sub` dictionary: bits of C code a fragment may use. The linker fills `fail`
/// (the failure code for this block), `id` and, in run blocks, `failure_var`; it adds `label`, a
/// human description of the variable ("input 0") for error messages.
using Sub = std::map<std::string, std::string>;

/// A variable whose glue the runtime holds instead of generated code (the prelude's
/// `libsection_var`, one entry of a module's node table): the same checks and messages as the
/// type's `c_*` code, written once in the runtime.
struct RuntimeVar {
  enum class Kind {
    array = 1,                     ///< `tensor_type`: a = the TypeError's start, b = the label
    object = 2,                    ///< held as is: `generic_type`, or an unchecked array
    pytensor_array = 3,            ///< PyTensor's checks; a = the typenum's name
    pytensor_array_unchecked = 4,  ///< PyTensor's, with `check_input` off
    scalar_bool = 5,               ///< a = the TypeError's format (`%s`: the type got)
    scalar_int = 6,                ///< a = the TypeError's format, b = the OverflowError's text
    scalar_uint = 7,
    scalar_float = 8,
  };
  Kind kind;
  int typenum = 0;
  int n = 0;  ///< arrays: dimensions; scalars: item size in bytes
  std::string a, b;
};

/// `var` as the C initializer of a `libsection_var` (`{kind, typenum, n, "a", "b"}`).
std::string c_initializer(RuntimeVar const& var);

/// `sub[key]`, or empty when `sub` has no such entry (an op without params has no `params`).
std::string sub_value(Sub const& sub, std::string const& key);

/// C support for a type, as PyTensor's `CType` gives it: each method returns C code for the
/// variable `name`, whose Python object is `py_<name>`. Either `c_init` or `c_extract` runs;
/// `c_cleanup` always runs, also after a failure inside `c_extract`, so it must cope with a
/// half-extracted variable.
class CType {
 public:
  virtual ~CType() = default;

  /// How the type is written in signatures and error messages: `float64[:]`, `int64`, `object`.
  virtual std::string describe() const = 0;

  virtual std::string c_declare(std::string const& name, Sub const& sub,
                                bool check_input) const = 0;
  virtual std::string c_init(std::string const& name, Sub const& sub) const = 0;
  virtual std::string c_extract(std::string const& name, Sub const& sub,
                                bool check_input) const = 0;
  virtual std::string c_sync(std::string const& name, Sub const& sub) const = 0;
  virtual std::string c_cleanup(std::string const& name, Sub const& sub) const = 0;

  virtual std::vector<std::string> c_support_code() const { return {}; }
  virtual std::vector<std::string> c_headers() const { return {}; }
  virtual std::vector<std::string> c_header_dirs() const { return {}; }  ///< `-I` directories
  virtual std::vector<std::string> c_libraries() const { return {}; }
  virtual std::vector<std::string> c_lib_dirs() const { return {}; }  ///< `-L` directories
  virtual std::vector<std::string> c_compile_args() const { return {}; }
  virtual std::vector<std::string> c_init_code() const { return {}; }
  /// Changes whenever the C code above changes; empty means unversioned. The module cache is
  /// keyed by the module's full text, so this is informational (shown by `section-cache`).
  virtual std::string c_code_cache_version() const { return {}; }
  /// The primitive C type of the elements (`npy_int32`); empty when there is none.
  virtual std::string c_element_type() const { return {}; }
  /// The NumPy dtype, for the expander's `DTYPE_`/`TYPENUM_`/`ITEMSIZE_` macros.
  virtual std::optional<DtypeInfo> dtype() const { return std::nullopt; }
  /// For a NumPy array type, its number of dimensions: what an output must have (with
  /// `dtype()`) when it is handed back to a caller.
  virtual std::optional<int> array_ndim() const { return std::nullopt; }
  /// When the runtime holds this type's glue, its node table entry for a variable with `sub`
  /// (its `label`); nothing when the module must keep the generated `c_*` code.
  virtual std::optional<RuntimeVar> runtime_var(Sub const& sub, bool check_input) const {
    (void)sub;
    (void)check_input;
    return std::nullopt;
  }
};

using CTypePtr = std::shared_ptr<CType const>;

/// The name of `type`'s dtype (`float64`), as the expander's macros need it; nothing without one.
std::optional<std::string> dtype_name(CType const& type);

/// A NumPy array (`PyArrayObject*`) of one dtype and number of dimensions, checked on extract.
CTypePtr tensor_type(DtypeInfo dtype, int ndim);
/// A NumPy scalar held as `npy_<dtype>`; accepts Python and NumPy numbers, returns NumPy scalars.
CTypePtr scalar_type(DtypeInfo dtype);
/// Any Python object, held as a new reference (`PyObject*`).
CTypePtr generic_type();
/// PyTensor's `TensorType` (its C code version 11) with its glue written by libsection: the
/// same checks, exception types and messages, the checks being calls of prelude functions.
/// `element_type` and `typenum` are its `dtype_specs()[1:]` (`npy_float64`, `NPY_FLOAT64`);
/// everything but the glue comes from `rest`, the type as its Python methods give it. Throws
/// `std::invalid_argument` for names that are not NumPy's.
CTypePtr pytensor_tensor_type(std::string element_type, std::string typenum, CTypePtr rest);

/// An op's params: a C struct with one member per field (sorted by name, named like PyTensor's
/// `ParamsType`), extracted once per instance from a Python dict. `PARAMS->field` in op code.
class ParamsType : public CType {
 public:
  /// Throws `std::invalid_argument` for a repeated or non-identifier name, or an `object` field.
  explicit ParamsType(std::vector<NamedType> fields);

  /// What the expander needs: `PARAMS_TYPE` and the `DTYPE_PARAM_*` element types.
  ParamsSpec const& spec() const { return spec_; }

  std::string describe() const override;
  std::string c_declare(std::string const& name, Sub const& sub, bool check_input) const override;
  std::string c_init(std::string const& name, Sub const& sub) const override;
  std::string c_extract(std::string const& name, Sub const& sub, bool check_input) const override;
  std::string c_sync(std::string const& name, Sub const& sub) const override;
  std::string c_cleanup(std::string const& name, Sub const& sub) const override;
  std::vector<std::string> c_support_code() const override;
  std::string c_code_cache_version() const override;

 private:
  struct Field {
    std::string name;
    CTypePtr type;
  };
  std::vector<Field> fields_;
  ParamsSpec spec_;
};

/// The `ParamsType` of params fields given as strings (`build()`'s `params`); nothing when there
/// are none. Throws `signature_error` (`params: ...`) where `ParamsType` refuses the fields.
std::shared_ptr<ParamsType const> make_params_type(std::vector<NamedType> fields);

/// A type whose C code is `%(name)s`-style templates, as a Python `CType` writes them:
/// `%(name)s` and `%(<sub key>)s` are replaced, `%%` becomes `%`.
struct TemplateTypeSpec {
  std::string description;
  std::string declare, init, extract, sync, cleanup;
  std::vector<std::string> support_code, headers, libraries, compile_args, init_code;
  std::string cache_version;
  std::string element_type;
};
CTypePtr template_type(TemplateTypeSpec spec);

/// Fills a `%(key)s` template from `values` (and `%%` → `%`). Throws `std::invalid_argument`
/// naming the key when the template uses one that is not there.
std::string fill_template(std::string const& text, Sub const& values);

/// The built-in type for a signature type (`float64[:]`, `int64`, `object`).
CTypePtr ctype_for(TypeSpec const& spec);
/// `ctype_for(parse_type(text))`; throws `signature_error` saying what is wrong.
CTypePtr parse_ctype(std::string_view text);
/// `ctype_for` of each.
std::vector<CTypePtr> ctypes_for(std::vector<TypeSpec> const& specs);

}  // namespace section
