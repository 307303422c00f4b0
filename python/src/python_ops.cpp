// Types and ops written in Python: each `c_*` method of the linker core's interfaces calls the
// Python method of the same name, when the object has one; PyTensor's own TensorType gets
// libsection's version of its glue (`pytensor_tensor_type`) instead.
#include "python_ops.hpp"

#include <pybind11/stl.h>

#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "diagnostic_record.hpp"
#include "link_errors.hpp"

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

/// A type object from Python with the CType methods (`c_declare(name, sub)`, ...). The methods
/// without arguments are asked once, here, so generating a module calls into Python only for
/// the code of each variable (the GIL is held: the linker generates code while its caller holds
/// it).
class PythonType final : public CType {
 public:
  explicit PythonType(py::object type) : type_(std::move(type)) {
    for (char const* required : {"c_declare", "c_extract"})
      if (!py::hasattr(type_, required))
        throw py::type_error("type " + std::string(py::repr(type_)) + " has no " + required +
                             "(name, sub) method: it cannot be used from C");
    description_ = py::str(type_);
    support_code_ = list("c_support_code");
    headers_ = list("c_headers");
    header_dirs_ = list("c_header_dirs");
    libraries_ = list("c_libraries");
    lib_dirs_ = list("c_lib_dirs");
    compile_args_ = list("c_compile_args");
    init_code_ = list("c_init_code");
    if (py::hasattr(type_, "c_code_cache_version"))
      cache_version_ = py::str(type_.attr("c_code_cache_version")());
    if (py::hasattr(type_, "c_element_type"))
      element_type_ = py::str(type_.attr("c_element_type")());
    // PyTensor's types with a dtype (its `HasDataType`) get the dtype macros from it.
    if (py::hasattr(type_, "dtype") && py::isinstance<py::str>(type_.attr("dtype")))
      dtype_ = dtype_info(type_.attr("dtype").cast<std::string>());
  }
  std::string describe() const override { return description_; }
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
  std::vector<std::string> c_support_code() const override { return support_code_; }
  std::vector<std::string> c_headers() const override { return headers_; }
  std::vector<std::string> c_header_dirs() const override { return header_dirs_; }
  std::vector<std::string> c_libraries() const override { return libraries_; }
  std::vector<std::string> c_lib_dirs() const override { return lib_dirs_; }
  std::vector<std::string> c_compile_args() const override { return compile_args_; }
  std::vector<std::string> c_init_code() const override { return init_code_; }
  std::string c_code_cache_version() const override { return cache_version_; }
  std::string c_element_type() const override { return element_type_; }
  std::optional<DtypeInfo> dtype() const override { return dtype_; }

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
  std::string description_, cache_version_, element_type_;
  std::vector<std::string> support_code_, headers_, header_dirs_, libraries_, lib_dirs_,
      compile_args_, init_code_;
  std::optional<DtypeInfo> dtype_;
};

/// The methods of an op object from Python with PyTensor `COp`-like methods, minus the `node`
/// argument: `c_code(name, inputs, outputs, sub)`, `c_code_cleanup(...)`, `c_support_code()`,
/// `c_support_code_apply(name)`, `c_init_code()`, `c_init_code_apply(name)`,
/// `c_support_code_struct(name)`, `c_init_code_struct(name, sub)`, `c_cleanup_code_struct(name)`,
/// `c_headers()`, `c_header_dirs()`, `c_libraries()`, `c_lib_dirs()`, `c_compile_args()`.
/// Each is asked when `wanted(its name)` and the object has it.
template <class Wanted>
void take_python_parts(py::object const& op, NodeContext const& ctx, OpCode& code,
                       Wanted const& wanted) {
  auto const has = [&](char const* method) { return wanted(method) && py::hasattr(op, method); };
  auto const list = [&](char const* method, std::vector<std::string>& out) {
    if (has(method)) out = string_list(op.attr(method)());
  };
  auto const text = [&](char const* method, std::string& out, auto&&... args) {
    if (has(method)) out = op.attr(method)(args...).template cast<std::string>();
  };
  py::str const node(ctx.node_name);
  py::list inputs = py::cast(ctx.inputs), outputs = py::cast(ctx.outputs);
  py::dict const sub = sub_dict(ctx.sub);
  text("c_code", code.code, node, inputs, outputs, sub);
  text("c_code_cleanup", code.code_cleanup, node, inputs, outputs, sub);
  list("c_support_code", code.support_code);
  list("c_init_code", code.init_code);
  list("c_headers", code.headers);
  list("c_header_dirs", code.header_dirs);
  list("c_libraries", code.libraries);
  list("c_lib_dirs", code.lib_dirs);
  list("c_compile_args", code.compile_args);
  text("c_support_code_apply", code.support_code_apply, node);
  text("c_init_code_apply", code.init_code_apply, node);
  text("c_support_code_struct", code.support_code_struct, node);
  text("c_init_code_struct", code.init_code_struct, node, sub_dict(ctx.init_sub));
  text("c_cleanup_code_struct", code.cleanup_code_struct, node);
}

/// An op object from Python whose every `c_*` method (`take_python_parts`) is called; `c_code`
/// is required. A string attribute `name` names it in messages (default: its class's name); one
/// named `language`, `"c"` or `"c++"` (the default), declares its code's; one named
/// `release_gil`, false, keeps the GIL while its code runs.
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
  Language language() const override {
    if (!py::hasattr(op_, "language")) return Language::cxx;
    return parse_language(py::str(op_.attr("language")).cast<std::string>(), name());
  }
  bool may_release_gil() const override {
    return !py::hasattr(op_, "release_gil") || py::bool_(op_.attr("release_gil"));
  }
  OpCode generate(NodeContext const& ctx) const override {
    OpCode code;
    take_python_parts(op_, ctx, code, [](char const*) { return true; });
    return code;
  }

 private:
  py::object op_;
};

/// A drop-in node's op: its section files expanded by the linker core, as `build()`'s ops are,
/// with the section op's flags (PyTensor's) added; only the methods named in `overridden`,
/// which the op's class overrides in Python, are asked of `python` (the node's methods minus
/// `node`). An overridden `get_c_macros` or `format_c_function_args`, which reshape every
/// string, goes into the expansion where the generated macros or argument list would be, as
/// PyTensor's methods place it. Expansion errors raise what the drop-in's methods raise in
/// PyTensor's C backend (`raise_expansion_errors`).
class DropInOp final : public COp {
 public:
  DropInOp(SectionOp section, py::object python, std::set<std::string> overridden)
      : section_(std::move(section)), python_(std::move(python)),
        overridden_(std::move(overridden)) {}
  std::string name() const override { return section_.name(); }
  Language language() const override { return section_.language(); }
  bool may_release_gil() const override { return section_.may_release_gil(); }
  OpCode generate(NodeContext const& ctx) const override {
    std::optional<NodeContext> const reshaped = reshaped_context(ctx);
    Expansion e = section_.expansion(reshaped ? *reshaped : ctx);
    std::vector<ExpansionError> errors;
    for (auto const& d : e.diagnostics)
      if (d.is_error()) errors.push_back({d.code, d.message});
    raise_expansion_errors(name(), errors, !e.code && !asks("c_code"));
    OpCode code;
    code.support_code = {std::move(e.support_code)};
    if (e.code) code.code = std::move(*e.code);
    static_cast<ApplyCode&>(code) = std::move(static_cast<ApplyCode&>(e));
    static_cast<BuildFlags&>(code) = section_.flags();
    if (!overridden_.empty())
      take_python_parts(python_, ctx, code, [&](char const* method) { return asks(method); });
    return code;
  }

 private:
  bool asks(char const* method) const { return overridden_.count(method) != 0; }

  /// `ctx` with what the reshaping overrides give for it; nothing without them.
  std::optional<NodeContext> reshaped_context(NodeContext const& ctx) const {
    if (!asks("get_c_macros") && !asks("format_c_function_args")) return std::nullopt;
    NodeContext out = ctx;
    bool const calls = section_.description().func_name.has_value();
    if (asks("format_c_function_args") && calls && !ctx.outputs.empty())
      out.function_args =
          python_.attr("format_c_function_args")(py::cast(ctx.inputs), py::cast(ctx.outputs))
              .cast<std::string>();
    if (asks("get_c_macros")) {
      using Macros = std::pair<std::string, std::string>;
      py::object const get_c_macros = python_.attr("get_c_macros");
      out.macros = get_c_macros(ctx.node_name).cast<Macros>();
      if (calls)
        out.call_macros =
            get_c_macros(ctx.node_name, py::arg("check_input") = false).cast<Macros>();
    }
    return out;
  }

  SectionOp section_;
  py::object python_;
  std::set<std::string> overridden_;
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

/// A drop-in node's op: `section`, asking `python` for the `overridden` methods only.
COpPtr dropin_op(SectionOp section, py::object python, std::vector<std::string> const& overridden) {
  return std::make_shared<DropInOp>(std::move(section), std::move(python),
                                    std::set<std::string>(overridden.begin(), overridden.end()));
}

/// The section op of a drop-in node: its parsed sections, described, with `compile_args`.
SectionOp dropin_section_op(LoadedSections const& loaded, OpDescription description,
                            ExpandOptions options, std::vector<std::string> compile_args) {
  BuildFlags flags;
  flags.compile_args = std::move(compile_args);
  return SectionOp(std::move(description), loaded.sources, loaded.set, std::move(options),
                   std::move(flags));
}

/// A `DerivativeRefusal` as Python reads it: its message and its diagnostics.
py::dict refusal_record(DerivativeRefusal const& refusal, SourceManager const& sm) {
  py::dict out;
  out["message"] = refusal.message;
  out["diagnostics"] = py::cast(make_records(refusal.diagnostics, sm));
  return out;
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

std::vector<CTypePtr> to_types(std::vector<py::object> const& values) {
  std::vector<CTypePtr> types;
  for (auto const& value : values) types.push_back(to_type(value));
  return types;
}

COpPtr to_op(py::object op) {
  if (py::isinstance<NodeOp>(op)) return op.cast<NodeOp const&>().op;
  return std::make_shared<PythonOp>(std::move(op));
}

NodeOp dropin_node_op(LoadedSections const& loaded, OpDescription description,
                      ExpandOptions options, std::vector<std::string> compile_args,
                      py::object python, std::vector<std::string> const& overridden) {
  return NodeOp{dropin_op(dropin_section_op(loaded, std::move(description), std::move(options),
                                            std::move(compile_args)),
                          std::move(python), overridden)};
}

NodeOp derivative_node_op(LoadedSections const& loaded, OpDescription description,
                          ExpandOptions options, std::vector<std::string> compile_args,
                          py::object python, std::vector<std::string> const& overridden,
                          std::vector<py::object> const& output_types,
                          std::vector<bool> differentiated, std::vector<bool> cotangents, int width,
                          std::string const& mode) {
  SectionOp const section = dropin_section_op(loaded, std::move(description), std::move(options),
                                              std::move(compile_args));
  try {
    DerivativeSpec spec = derivative_spec(mode, to_types(output_types), std::move(differentiated),
                                          std::move(cotangents), width);
    COpPtr const forward = dropin_op(section, std::move(python), overridden);
    return NodeOp{derivative_op(section, forward, std::move(spec))};
  } catch (LinkError const& e) {
    raise_python(e, *loaded.sources);
  } catch (std::invalid_argument const& e) {
    throw py::value_error(e.what());
  }
}

py::dict derivative_refusals_record(LoadedSections const& loaded, OpDescription description,
                                    ExpandOptions options, std::vector<bool> const& differentiated,
                                    std::vector<bool> const& dual_outputs) {
  SectionOp const section =
      dropin_section_op(loaded, std::move(description), std::move(options), {});
  auto const refusals = derivative_refusals(section, differentiated, dual_outputs);
  py::dict inputs;
  for (auto const& [input, refusal] : refusals.inputs)
    inputs[py::int_(input)] = refusal_record(refusal, *loaded.sources);
  py::dict out;
  out["all"] =
      refusals.all ? py::object(refusal_record(*refusals.all, *loaded.sources)) : py::none();
  out["every"] = refusals.every;
  out["inputs"] = inputs;
  return out;
}

}  // namespace section::python
