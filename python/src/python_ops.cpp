// Types and ops written in Python: each `c_*` method of the linker core's interfaces calls the
// Python method of the same name, when the object has one; PyTensor's own TensorType gets
// libsection's version of its glue (`pytensor_tensor_type`) instead.
#include "python_ops.hpp"

#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace py = pybind11;

namespace section::python {
namespace {

std::vector<std::string> string_list(py::object const& value) {
  if (value.is_none()) return {};
  if (py::isinstance<py::str>(value)) return {value.cast<std::string>()};
  return value.cast<std::vector<std::string>>();
}

py::dict sub_dict(Sub const& sub) {
  py::dict d;
  for (auto const& [k, v] : sub) d[py::str(k)] = py::str(v);
  return d;
}

/// A type object from Python with the CType methods (`c_declare(name, sub)`, ...). The GIL is
/// held: the linker only generates code while the caller holds it.
class PythonType final : public CType {
 public:
  explicit PythonType(py::object type) : type_(std::move(type)) {
    for (char const* required : {"c_declare", "c_extract"})
      if (!py::hasattr(type_, required))
        throw py::type_error("type " + std::string(py::repr(type_)) + " has no " + required +
                             "(name, sub) method: it cannot be used from C");
  }
  std::string describe() const override { return py::str(type_); }
  std::string c_declare(std::string const& n, Sub const& s, bool) const override {
    return text("c_declare", n, s);
  }
  std::string c_init(std::string const& n, Sub const& s) const override {
    return text("c_init", n, s);
  }
  std::string c_extract(std::string const& n, Sub const& s, bool) const override {
    return text("c_extract", n, s);
  }
  std::string c_sync(std::string const& n, Sub const& s) const override {
    return text("c_sync", n, s);
  }
  std::string c_cleanup(std::string const& n, Sub const& s) const override {
    return text("c_cleanup", n, s);
  }
  std::vector<std::string> c_support_code() const override { return list("c_support_code"); }
  std::vector<std::string> c_headers() const override { return list("c_headers"); }
  std::vector<std::string> c_header_dirs() const override { return list("c_header_dirs"); }
  std::vector<std::string> c_libraries() const override { return list("c_libraries"); }
  std::vector<std::string> c_lib_dirs() const override { return list("c_lib_dirs"); }
  std::vector<std::string> c_compile_args() const override { return list("c_compile_args"); }
  std::vector<std::string> c_init_code() const override { return list("c_init_code"); }
  std::string c_code_cache_version() const override {
    if (!py::hasattr(type_, "c_code_cache_version")) return {};
    return py::str(type_.attr("c_code_cache_version")());
  }
  std::string c_element_type() const override {
    if (!py::hasattr(type_, "c_element_type")) return {};
    return py::str(type_.attr("c_element_type")());
  }

 private:
  std::string text(char const* method, std::string const& name, Sub const& sub) const {
    if (!py::hasattr(type_, method)) return {};
    return type_.attr(method)(name, sub_dict(sub)).cast<std::string>();
  }
  std::vector<std::string> list(char const* method) const {
    if (!py::hasattr(type_, method)) return {};
    return string_list(type_.attr(method)());
  }
  py::object type_;
};

/// An op object from Python with PyTensor `COp`-like methods, minus the `node` argument:
/// `c_code(name, inputs, outputs, sub)` (required), `c_code_cleanup(...)`, `c_support_code()`,
/// `c_support_code_apply(name)`, `c_init_code()`, `c_init_code_apply(name)`,
/// `c_support_code_struct(name)`, `c_init_code_struct(name, sub)`,
/// `c_cleanup_code_struct(name)`, `c_headers()`, `c_header_dirs()`, `c_libraries()`,
/// `c_lib_dirs()`, `c_compile_args()`. A string attribute `name` names it in messages (default:
/// its class's name).
class PythonOp final : public COp {
 public:
  explicit PythonOp(py::object op) : op_(std::move(op)) {
    if (!py::hasattr(op_, "c_code"))
      throw py::type_error("op " + std::string(py::repr(op_)) +
                           " has no c_code(name, inputs, outputs, sub) method");
  }
  std::string name() const override {
    if (py::hasattr(op_, "name") && py::isinstance<py::str>(op_.attr("name")))
      return op_.attr("name").cast<std::string>();
    return py::str(py::type::handle_of(op_).attr("__name__"));
  }
  OpCode generate(NodeContext const& ctx) const override {
    py::str const node(ctx.node_name);
    py::list inputs = py::cast(ctx.inputs), outputs = py::cast(ctx.outputs);
    py::dict const sub = sub_dict(ctx.sub);
    OpCode code;
    code.code = op_.attr("c_code")(node, inputs, outputs, sub).cast<std::string>();
    code.code_cleanup = call("c_code_cleanup", node, inputs, outputs, sub);
    code.support_code = list("c_support_code");
    code.init_code = list("c_init_code");
    code.headers = list("c_headers");
    code.header_dirs = list("c_header_dirs");
    code.libraries = list("c_libraries");
    code.lib_dirs = list("c_lib_dirs");
    code.compile_args = list("c_compile_args");
    code.support_code_apply = call("c_support_code_apply", node);
    code.init_code_apply = call("c_init_code_apply", node);
    code.support_code_struct = call("c_support_code_struct", node);
    code.init_code_struct = call("c_init_code_struct", node, sub_dict(ctx.init_sub));
    code.cleanup_code_struct = call("c_cleanup_code_struct", node);
    return code;
  }

 private:
  template <class... Args>
  std::string call(char const* method, Args&&... args) const {
    if (!py::hasattr(op_, method)) return {};
    return op_.attr(method)(std::forward<Args>(args)...).template cast<std::string>();
  }
  std::vector<std::string> list(char const* method) const {
    if (!py::hasattr(op_, method)) return {};
    return string_list(op_.attr(method)());
  }
  py::object op_;
};

// The version of PyTensor's TensorType C code that `pytensor_tensor_type` reproduces (the same
// text in PyTensor 3.0 to 3.3); another version keeps the glue its methods write.
constexpr long pytensor_tensor_glue_version = 11;

// Whether `value` is a PyTensor TensorType whose glue is exactly that class's: no class of its
// MRO before TensorType, nor the instance, defines a `c_*` method or `dtype_specs` (which the
// glue is written from), and its C code version is the one reproduced.
bool has_pytensor_tensor_glue(py::handle value) {
  py::object const module =
      py::module_::import("sys").attr("modules").attr("get")("pytensor.tensor.type");
  if (module.is_none()) return false;  // no PyTensor type can exist yet
  py::object const base = module.attr("TensorType");
  if (!py::isinstance(value, base)) return false;
  // TensorType's glue methods, listed once (every variable of every drop-in node asks).
  static std::vector<std::string> const glue_methods = [&] {
    std::vector<std::string> out;
    for (py::handle name : py::module_::import("builtins").attr("dir")(base)) {
      std::string n = name.cast<std::string>();
      if (n.rfind("c_", 0) == 0 || n == "dtype_specs") out.push_back(std::move(n));
    }
    return out;
  }();
  std::vector<py::object> own;  // the namespaces that could redefine TensorType's methods
  if (py::hasattr(value, "__dict__")) own.push_back(value.attr("__dict__"));
  for (py::handle cls : py::type::handle_of(value).attr("__mro__")) {
    if (cls.is(base)) break;
    own.push_back(cls.attr("__dict__"));
  }
  for (auto const& names : own)
    for (auto const& method : glue_methods)
      if (names.contains(method)) return false;
  py::object const version = value.attr("c_code_cache_version")();
  return py::isinstance<py::tuple>(version) && py::len(version) > 0 &&
         py::isinstance<py::int_>(version[py::int_(0)]) &&
         version[py::int_(0)].cast<long>() == pytensor_tensor_glue_version;
}

}  // namespace

CTypePtr to_type(py::handle value) {
  if (py::isinstance<py::str>(value)) return parse_ctype(value.cast<std::string>());
  auto python = std::make_shared<PythonType>(py::reinterpret_borrow<py::object>(value));
  if (!has_pytensor_tensor_glue(value)) return python;
  py::tuple const specs = value.attr("dtype_specs")();
  return pytensor_tensor_type(specs[1].cast<std::string>(), specs[2].cast<std::string>(),
                              std::move(python));
}

COpPtr to_op(py::object op) { return std::make_shared<PythonOp>(std::move(op)); }

}  // namespace section::python
