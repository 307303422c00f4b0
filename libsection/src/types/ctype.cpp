// Built-in CTypes: NumPy tensors, NumPy scalars, generic Python objects, params structs,
// `%(name)s` templates, and the signature type strings that name them.
#include "section/ctype.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "base/hash.hpp"
#include "base/text.hpp"
#include "section/names.hpp"

namespace section {
namespace {

std::string label_of(Sub const& sub) {
  auto it = sub.find("label");
  std::string label = it == sub.end() ? std::string("value") : it->second;
  // Labels end up inside PyErr_Format formats.
  label.erase(std::remove(label.begin(), label.end(), '%'), label.end());
  return label;
}

std::string fail_of(Sub const& sub) {
  auto it = sub.find("fail");
  if (it == sub.end()) throw std::invalid_argument("the linker gave a type no `fail` code");
  return it->second;
}

std::string ndim_text(int ndim) {
  if (ndim == 0) return "[]";
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += i ? ",:" : ":";
  return s + "]";
}

class TensorType final : public CType {
 public:
  TensorType(DtypeInfo dtype, int ndim) : dtype_(std::move(dtype)), ndim_(ndim) {}

  std::string describe() const override { return dtype_.name + ndim_text(ndim_); }

  std::string c_declare(std::string const& name, Sub const&, bool) const override {
    return "PyArrayObject* " + name + ";\n";
  }
  std::string c_init(std::string const& name, Sub const&) const override {
    return name + " = NULL;\n";
  }
  std::string c_extract(std::string const& name, Sub const& sub, bool check_input) const override {
    std::string const fail = fail_of(sub);
    std::string code = name + " = NULL;\n";
    if (check_input)  // the prelude's shared check: one call per variable, not its text
      code += "if (libsection_check_tensor(py_" + name + ", " + std::to_string(dtype_.typenum) +
              ", " + std::to_string(ndim_) + ", " + c_string_literal(want(sub)) + ", " +
              c_string_literal(label_of(sub)) + ")) {\n  " + fail + "\n}\n";
    code += name + " = (PyArrayObject*)py_" + name + ";\nLIBSECTION_INCREF(" + name + ");\n";
    return code;
  }
  std::string c_sync(std::string const& name, Sub const&) const override {
    return "if (!" + name +
           ") {\n"
           "  LIBSECTION_XDECREF(py_" +
           name + ");\n  py_" + name +
           " = Py_None;\n  LIBSECTION_INCREF(Py_None);\n"
           "} else if ((PyObject*)" +
           name + " != py_" + name +
           ") {\n"
           "  LIBSECTION_XDECREF(py_" +
           name + ");\n  py_" + name + " = (PyObject*)" + name +
           ";\n"
           "  LIBSECTION_INCREF(py_" +
           name + ");\n}\n";
  }
  std::string c_cleanup(std::string const& name, Sub const&) const override {
    return "LIBSECTION_XDECREF(" + name + ");\n" + name + " = NULL;\n";
  }
  std::optional<RuntimeVar> runtime_var(Sub const& sub, bool check_input) const override {
    if (!check_input) return RuntimeVar{RuntimeVar::Kind::object, 0, 0, {}, {}};
    return RuntimeVar{RuntimeVar::Kind::array, dtype_.typenum, ndim_, want(sub), label_of(sub)};
  }
  std::vector<std::string> c_headers() const override {
    // NumPy's complex numbers are read and written through npy_math.h (npy_creal, npy_csetreal),
    // which PyTensor's tensors always include.
    if (dtype_.name.rfind("complex", 0) == 0) return {"<numpy/npy_math.h>"};
    return {};
  }
  std::string c_code_cache_version() const override { return "tensor-3"; }
  std::string c_element_type() const override { return dtype_.c_type; }
  std::optional<DtypeInfo> dtype() const override { return dtype_; }
  std::optional<int> array_ndim() const override { return ndim_; }

 private:
  // The start of the TypeError for a value that is not such an array.
  std::string want(Sub const& sub) const {
    return label_of(sub) + ": expected a " + describe() + " array (" + dtype_.name + ", " +
           std::to_string(ndim_) + "-d)";
  }
  DtypeInfo dtype_;
  int ndim_;
};

// PyTensor's TensorType, its glue written here with its checks in the prelude's
// `libsection_pt_*` functions (one call per variable instead of its ~40 lines); what is not glue
// (describe, headers, support code, versions) is the wrapped type's.
class PyTensorTensorType final : public CType {
 public:
  PyTensorTensorType(std::string element_type, std::string typenum, CTypePtr rest)
      : element_type_(std::move(element_type)), typenum_(std::move(typenum)),
        rest_(std::move(rest)) {}

  std::string describe() const override { return rest_->describe(); }
  std::string c_declare(std::string const& name, Sub const&, bool check_input) const override {
    std::string code = "PyArrayObject* " + name + ";\n";
    if (check_input) code += "typedef " + element_type_ + " dtype_" + name + ";\n";
    return code;
  }
  std::string c_init(std::string const& name, Sub const&) const override {
    return name + " = NULL;\n";
  }
  std::string c_extract(std::string const& name, Sub const& sub, bool check_input) const override {
    if (!check_input)
      return name + " = (PyArrayObject*)(py_" + name + ");\nPy_XINCREF(" + name + ");\n";
    // Past the check `py_<name>` is an array: the increment needs no NULL test.
    return name + " = NULL;\nif (libsection_pt_extract(py_" + name + ", " + typenum_ + ", " +
           c_string_literal(typenum_) + ")) {\n  " + fail_of(sub) + "\n}\n" + name +
           " = (PyArrayObject*)(py_" + name + ");\nLIBSECTION_INCREF(" + name + ");\n";
  }
  std::string c_sync(std::string const& name, Sub const& sub) const override {
    return "if (libsection_pt_sync(&py_" + name + ", " + name + ")) {\n  " + fail_of(sub) + "\n}\n";
  }
  std::string c_cleanup(std::string const& name, Sub const&) const override {
    return "LIBSECTION_XDECREF(" + name + ");\n";
  }
  std::optional<RuntimeVar> runtime_var(Sub const&, bool check_input) const override {
    // The number `typenum_` (`NPY_FLOAT64`) names; a name outside the table keeps its glue.
    std::string name = typenum_.substr(4);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto const dtype = dtype_info(name);
    if (!dtype) return std::nullopt;
    return RuntimeVar{
        check_input ? RuntimeVar::Kind::pytensor_array : RuntimeVar::Kind::pytensor_array_unchecked,
        dtype->typenum,
        0,
        typenum_,
        {}};
  }
  std::vector<std::string> c_support_code() const override { return rest_->c_support_code(); }
  std::vector<std::string> c_headers() const override { return rest_->c_headers(); }
  std::vector<std::string> c_header_dirs() const override { return rest_->c_header_dirs(); }
  std::vector<std::string> c_libraries() const override { return rest_->c_libraries(); }
  std::vector<std::string> c_lib_dirs() const override { return rest_->c_lib_dirs(); }
  std::vector<std::string> c_compile_args() const override { return rest_->c_compile_args(); }
  std::vector<std::string> c_init_code() const override { return rest_->c_init_code(); }
  std::string c_code_cache_version() const override { return rest_->c_code_cache_version(); }
  std::string c_element_type() const override { return rest_->c_element_type(); }
  std::optional<DtypeInfo> dtype() const override { return rest_->dtype(); }
  std::optional<int> array_ndim() const override { return rest_->array_ndim(); }

 private:
  std::string element_type_, typenum_;
  CTypePtr rest_;
};

enum class ScalarKind { boolean, signed_int, unsigned_int, floating };

ScalarKind kind_of(DtypeInfo const& d) {
  if (d.name == "bool") return ScalarKind::boolean;
  if (d.name.rfind("uint", 0) == 0) return ScalarKind::unsigned_int;
  if (d.name.rfind("int", 0) == 0) return ScalarKind::signed_int;
  if (d.name == "float32" || d.name == "float64") return ScalarKind::floating;
  // A 0-d array takes every dtype a tensor does, complex numbers too.
  throw std::invalid_argument("scalar dtype `" + d.name +
                              "` is not supported (use bool, int*, uint* or float32/float64, or "
                              "a 0-d array, `" +
                              d.name + "[]`)");
}

class ScalarType final : public CType {
 public:
  explicit ScalarType(DtypeInfo dtype) : dtype_(std::move(dtype)), kind_(kind_of(dtype_)) {}

  std::string describe() const override { return dtype_.name; }

  std::string c_declare(std::string const& name, Sub const&, bool) const override {
    return dtype_.c_type + " " + name + ";\n";
  }
  std::string c_init(std::string const& name, Sub const&) const override {
    return name + " = 0;\n";
  }
  // A params field converts as an input does: by the runtime's function, with its messages.
  std::string c_extract(std::string const& name, Sub const& sub, bool) const override {
    return "{\n  static const libsection_var var_ = " + c_initializer(*runtime_var(sub, true)) +
           ";\n  if (libsection_rt->convert(py_" + name + ", &" + name + ", &var_)) {\n    " +
           fail_of(sub) + "\n  }\n}\n";
  }

  std::string c_sync(std::string const& name, Sub const&) const override {
    // A NumPy scalar of the exact dtype, as NumPy's own reductions return.
    return "{\n  PyArray_Descr* descr_ = PyArray_DescrFromType(" + std::to_string(dtype_.typenum) +
           ");\n  PyObject* value_ = descr_ ? PyArray_Scalar(&" + name +
           ", descr_, NULL) : NULL;\n"
           "  LIBSECTION_XDECREF(descr_);\n  LIBSECTION_XDECREF(py_" +
           name +
           ");\n"
           "  if (value_) {\n    py_" +
           name +
           " = value_;\n  } else {\n"
           "    PyErr_Clear();\n    py_" +
           name + " = Py_None;\n    LIBSECTION_INCREF(Py_None);\n  }\n}\n";
  }
  std::string c_cleanup(std::string const&, Sub const&) const override { return {}; }
  std::optional<RuntimeVar> runtime_var(Sub const& sub, bool) const override {
    std::string const label = label_of(sub);
    std::string const range = label + ": value out of range for " + dtype_.name;
    switch (kind_) {
      case ScalarKind::boolean:
        return RuntimeVar{RuntimeVar::Kind::scalar_bool,
                          dtype_.typenum,
                          dtype_.itemsize,
                          label + ": expected a bool, got %s",
                          {}};
      case ScalarKind::floating:
        return RuntimeVar{RuntimeVar::Kind::scalar_float, dtype_.typenum, dtype_.itemsize,
                          label + ": expected a real number for " + dtype_.name + ", got %s",
                          range};
      case ScalarKind::signed_int:
      case ScalarKind::unsigned_int:
        return RuntimeVar{kind_ == ScalarKind::signed_int ? RuntimeVar::Kind::scalar_int
                                                          : RuntimeVar::Kind::scalar_uint,
                          dtype_.typenum, dtype_.itemsize,
                          label + ": expected an integer for " + dtype_.name + ", got %s", range};
    }
    return std::nullopt;
  }
  std::string c_code_cache_version() const override { return "scalar-1"; }
  std::string c_element_type() const override { return dtype_.c_type; }
  std::optional<DtypeInfo> dtype() const override { return dtype_; }

 private:
  DtypeInfo dtype_;
  ScalarKind kind_;
};

class GenericType final : public CType {
 public:
  std::string describe() const override { return "object"; }
  std::string c_declare(std::string const& name, Sub const&, bool) const override {
    return "PyObject* " + name + ";\n";
  }
  std::string c_init(std::string const& name, Sub const&) const override {
    return name + " = NULL;\n";
  }
  std::string c_extract(std::string const& name, Sub const&, bool) const override {
    return name + " = py_" + name + ";\nLIBSECTION_INCREF(" + name + ");\n";
  }
  std::string c_sync(std::string const& name, Sub const&) const override {
    return "if (!" + name + ") {\n  " + name +
           " = Py_None;\n  LIBSECTION_INCREF(Py_None);\n}\n"
           "if (" +
           name + " != py_" + name + ") {\n  LIBSECTION_XDECREF(py_" + name + ");\n  py_" + name +
           " = " + name + ";\n  LIBSECTION_INCREF(py_" + name + ");\n}\n";
  }
  std::string c_cleanup(std::string const& name, Sub const&) const override {
    return "LIBSECTION_XDECREF(" + name + ");\n" + name + " = NULL;\n";
  }
  std::optional<RuntimeVar> runtime_var(Sub const&, bool) const override {
    return RuntimeVar{RuntimeVar::Kind::object, 0, 0, {}, {}};
  }
  std::string c_code_cache_version() const override { return "generic-1"; }
};

class TemplateType final : public CType {
 public:
  explicit TemplateType(TemplateTypeSpec spec) : spec_(std::move(spec)) {}

  std::string describe() const override { return spec_.description; }
  std::string c_declare(std::string const& name, Sub const& sub, bool) const override {
    return fill(spec_.declare, name, sub);
  }
  std::string c_init(std::string const& name, Sub const& sub) const override {
    return fill(spec_.init, name, sub);
  }
  std::string c_extract(std::string const& name, Sub const& sub, bool) const override {
    return fill(spec_.extract, name, sub);
  }
  std::string c_sync(std::string const& name, Sub const& sub) const override {
    return fill(spec_.sync, name, sub);
  }
  std::string c_cleanup(std::string const& name, Sub const& sub) const override {
    return fill(spec_.cleanup, name, sub);
  }
  std::vector<std::string> c_support_code() const override { return spec_.support_code; }
  std::vector<std::string> c_headers() const override { return spec_.headers; }
  std::vector<std::string> c_libraries() const override { return spec_.libraries; }
  std::vector<std::string> c_compile_args() const override { return spec_.compile_args; }
  std::vector<std::string> c_init_code() const override { return spec_.init_code; }
  std::string c_code_cache_version() const override { return spec_.cache_version; }
  std::string c_element_type() const override { return spec_.element_type; }

 private:
  static std::string fill(std::string const& text, std::string const& name, Sub sub) {
    sub["name"] = name;
    return fill_template(text, sub);
  }
  TemplateTypeSpec spec_;
};

}  // namespace

CTypePtr tensor_type(DtypeInfo dtype, int ndim) {
  if (ndim < 0 || ndim > 32) throw std::invalid_argument("a tensor has 0 to 32 dimensions");
  return std::make_shared<TensorType>(std::move(dtype), ndim);
}
CTypePtr pytensor_tensor_type(std::string element_type, std::string typenum, CTypePtr rest) {
  auto const word = [](std::string const& s, char const* prefix) {
    return s.rfind(prefix, 0) == 0 && s.size() > 4 && is_c_identifier(s);
  };
  // Both are pasted into C code: only the names PyTensor gives (`npy_float64`, `NPY_FLOAT64`;
  // for complex numbers its own types, `pytensor_complex128`, which its support code defines).
  bool const complex =
      element_type == "pytensor_complex64" || element_type == "pytensor_complex128";
  if (!(complex || word(element_type, "npy_")) || !word(typenum, "NPY_"))
    throw std::invalid_argument("not a NumPy element type and type number: `" + element_type +
                                "`, `" + typenum + "`");
  if (!rest) throw std::invalid_argument("a PyTensor tensor type needs the type it wraps");
  return std::make_shared<PyTensorTensorType>(std::move(element_type), std::move(typenum),
                                              std::move(rest));
}
CTypePtr scalar_type(DtypeInfo dtype) { return std::make_shared<ScalarType>(std::move(dtype)); }
CTypePtr generic_type() { return std::make_shared<GenericType>(); }
CTypePtr template_type(TemplateTypeSpec spec) {
  return std::make_shared<TemplateType>(std::move(spec));
}

// ---- params struct -------------------------------------------------------------------------

ParamsType::ParamsType(std::vector<NamedType> fields) {
  for (auto const& f : fields)
    if (f.type.kind == TypeSpec::Kind::generic)
      throw std::invalid_argument("params field `" + f.name + "` must be a scalar or tensor type");
  spec_ = params_spec(fields);  // sorts, checks names, names the struct as PyTensor does
  std::sort(fields.begin(), fields.end(),
            [](auto const& a, auto const& b) { return a.name < b.name; });
  for (auto const& f : fields) fields_.push_back({f.name, ctype_for(f.type)});
}

std::string ParamsType::describe() const {
  std::string s = "params{";
  for (std::size_t i = 0; i < fields_.size(); ++i)
    s += (i ? ", " : "") + fields_[i].name + ": " + fields_[i].type->describe();
  return s + "}";
}

std::vector<std::string> ParamsType::c_support_code() const {
  std::string code = "#ifndef " + spec_.type_name + "_DEFINED\n#define " + spec_.type_name +
                     "_DEFINED\nstruct " + spec_.type_name + " {\n";
  for (auto const& f : fields_) code += "  " + f.type->c_declare(f.name, {}, true);
  return {code + "};\n#endif\n"};
}

std::string ParamsType::c_declare(std::string const& name, Sub const&, bool) const {
  return spec_.type_name + " " + name + "_value;\n" + spec_.type_name + "* " + name + ";\n";
}

std::string ParamsType::c_init(std::string const& name, Sub const&) const {
  std::string code = name + " = &" + name + "_value;\n";
  for (auto const& f : fields_) code += f.type->c_init(name + "_value." + f.name, {});
  return code;
}

std::string ParamsType::c_extract(std::string const& name, Sub const& sub, bool check_input) const {
  std::string const fail = fail_of(sub);
  std::string code = c_init(name, sub);
  code += "if (!PyDict_Check(py_" + name + ")) {\n  PyErr_SetString(PyExc_TypeError, " +
          c_string_literal("params: expected a dict with the fields of " + describe()) + ");\n  " +
          fail + "\n}\n";
  // Each field reuses its type's extraction through a local `py_` alias of the dict item.
  for (auto const& f : fields_) {
    std::string const local = name + "_field_" + f.name;
    Sub field_sub = sub;
    field_sub["label"] = "params field `" + f.name + "`";
    code += "{\n  PyObject* py_" + local + " = PyDict_GetItemString(py_" + name + ", \"" + f.name +
            "\");\n  if (!py_" + local + ") {\n    PyErr_SetString(PyExc_KeyError, " +
            c_string_literal("params: missing field `" + f.name + "`") + ");\n    " + fail +
            "\n  }\n  " + f.type->c_declare(local, field_sub, check_input) +
            f.type->c_extract(local, field_sub, check_input) + "  " + name + "_value." + f.name +
            " = " + local + ";\n}\n";
  }
  return code;
}

std::string ParamsType::c_sync(std::string const&, Sub const&) const { return {}; }

std::string ParamsType::c_cleanup(std::string const& name, Sub const& sub) const {
  std::string code;
  for (auto const& f : fields_) code += f.type->c_cleanup(name + "_value." + f.name, sub);
  return code;
}

std::string ParamsType::c_code_cache_version() const {
  std::string v = "params-1";
  for (auto const& f : fields_) v += "," + f.type->c_code_cache_version();
  return v;
}

// ---- templates and type strings ------------------------------------------------------------

std::string fill_template(std::string const& text, Sub const& values) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '(') {
      auto const close = text.find(')', i + 2);
      if (close != std::string::npos && close + 1 < text.size() && text[close + 1] == 's') {
        std::string const key = text.substr(i + 2, close - i - 2);
        auto it = values.find(key);
        if (it == values.end())
          throw std::invalid_argument("template uses `%(" + key + ")s`, which is not defined here");
        out += it->second;
        i = close + 1;
        continue;
      }
    }
    out += '%';
  }
  return out;
}

CTypePtr ctype_for(TypeSpec const& spec) {
  if (spec.kind == TypeSpec::Kind::generic) return generic_type();
  auto dtype = dtype_info(spec.dtype);
  if (!dtype) throw std::invalid_argument("unknown dtype `" + spec.dtype + "`");
  if (spec.kind == TypeSpec::Kind::scalar) return scalar_type(*dtype);
  return tensor_type(*dtype, spec.ndim);
}

std::string c_initializer(RuntimeVar const& var) {
  return "{" + std::to_string(static_cast<int>(var.kind)) + ", " + std::to_string(var.typenum) +
         ", " + std::to_string(var.n) + ", " + c_string_literal(var.a) + ", " +
         c_string_literal(var.b) + "}";
}

std::string sub_value(Sub const& sub, std::string const& key) {
  auto const it = sub.find(key);
  return it == sub.end() ? std::string() : it->second;
}

std::optional<std::string> dtype_name(CType const& type) {
  auto const d = type.dtype();
  return d ? std::optional<std::string>(d->name) : std::nullopt;
}

CTypePtr parse_ctype(std::string_view text) { return ctype_for(parse_type(text)); }

std::vector<CTypePtr> ctypes_for(std::vector<TypeSpec> const& specs) {
  std::vector<CTypePtr> out;
  for (TypeSpec const& spec : specs) out.push_back(ctype_for(spec));
  return out;
}

std::shared_ptr<ParamsType const> make_params_type(std::vector<NamedType> fields) {
  if (fields.empty()) return nullptr;
  try {
    return std::make_shared<ParamsType>(std::move(fields));
  } catch (std::invalid_argument const& e) {
    throw signature_error(std::string("params: ") + e.what());
  }
}

}  // namespace section
