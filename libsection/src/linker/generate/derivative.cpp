// The derivative op of an op (section/linker/generate/derivative.hpp). Its code is the op's own,
// asked for the same apply with the element macros of the differentiated inputs and of the
// float outputs naming dual numbers (generate/dual.h), inside a driver: dual copies of the
// differentiated inputs, the op's code run once per pass (its `code_cleanup` after each), the
// outputs' values checked against the op's own module's, their tangents contracted with the
// cotangents (pullback) or handed back (pushforward). The op's support, struct and init code are
// its own, with the same macros.
#include "section/linker/generate/derivative.hpp"

#include <algorithm>
#include <stdexcept>

#include "linker/generate/dual.h.hpp"
#include "linker/generate/layout.hpp"

namespace section {

char const* const dual_header = embedded::dual_h;

namespace {

bool is_float(std::optional<std::string> const& dtype) {
  return dtype == "float32" || dtype == "float64";
}

/// Whether the code holds a variable of `type` through a pointer (an array, an object), as the
/// type declares it.
bool held_by_pointer(CType const& type) {
  return type.c_declare("v", {}, true).find('*') != std::string::npos;
}

std::string dual_name(std::string const& dtype, int width) {
  return "libsection_dual_" + dtype + "_" + std::to_string(width);
}

/// The module's dual types (one name each, so macros never see a template's comma) and the
/// type numbers of their arrays.
std::string dual_typedefs(int width) {
  std::string out;
  for (auto const& [dtype, c_type] :
       {std::pair{"float64", "npy_float64"}, std::pair{"float32", "npy_float32"}}) {
    std::string const name = dual_name(dtype, width);
    out += "typedef libsection::dual<" + std::string(c_type) + ", " + std::to_string(width) + "> " +
           name + ";\nstatic inline int " + name +
           "_typenum(void) { return libsection::dual_dtype<" + name + ">::typenum(); }\n";
  }
  return out;
}

/// One variable of the op as its code sees it in the derivative's module.
struct Variable {
  std::string name;  ///< what the op's code gets (`lsd_in_0`, or the input itself)
  CType const* type = nullptr;
  std::optional<std::string> dtype;
  bool dual = false;   ///< its elements are dual numbers
  bool array = false;  ///< held through a pointer
};

class DerivativeOp final : public COp {
 public:
  DerivativeOp(COpPtr forward, DerivativeSpec spec)
      : forward_(std::move(forward)), spec_(std::move(spec)) {}
  std::string name() const override {
    return forward_->name() +
           (spec_.mode == DerivativeSpec::Mode::pullback ? ".pullback" : ".pushforward");
  }
  Language language() const override { return Language::cxx; }
  bool may_release_gil() const override { return forward_->may_release_gil(); }
  OpCode generate(NodeContext const& ctx) const override;

 private:
  bool pullback() const { return spec_.mode == DerivativeSpec::Mode::pullback; }
  std::vector<Variable> variables(NodeContext const& ctx, bool inputs) const;
  NodeContext inner_context(NodeContext const& ctx, std::vector<Variable> const& in,
                            std::vector<Variable> const& out) const;
  std::string driver(NodeContext const& ctx, std::vector<Variable> const& in,
                     std::vector<Variable> const& out, OpCode const& inner) const;
  std::string setup(NodeContext const& ctx, std::vector<Variable> const& in,
                    std::vector<Variable> const& out) const;
  std::string contraction(NodeContext const& ctx, std::vector<Variable> const& out) const;
  std::string checked_values(NodeContext const& ctx, std::vector<Variable> const& out) const;
  std::string check_value(NodeContext const& ctx, Variable const& out, std::size_t j,
                          std::string const& expected) const;
  std::size_t float_outputs() const {
    return static_cast<std::size_t>(
        std::count_if(spec_.outputs.begin(), spec_.outputs.end(),
                      [](auto& t) { return is_float(dtype_name(*t)); }));
  }
  std::string results(NodeContext const& ctx, std::vector<Variable> const& in,
                      std::vector<Variable> const& out) const;
  std::string where(std::string const& what) const {
    return escape_for_c_string(forward_->name() + " " + what);
  }

  COpPtr forward_;
  DerivativeSpec spec_;
};

// The op's inputs (from the apply: the derivative's first inputs are the op's) or outputs (from
// the spec), each named and typed as the op's code sees it here.
std::vector<Variable> DerivativeOp::variables(NodeContext const& ctx, bool inputs) const {
  std::vector<Variable> out;
  std::size_t const n = inputs ? spec_.differentiated.size() : spec_.outputs.size();
  for (std::size_t i = 0; i < n; ++i) {
    Variable v;
    v.type = inputs ? ctx.input_types.at(i) : spec_.outputs[i].get();
    v.dtype = inputs ? ctx.input_dtypes.at(i) : dtype_name(*v.type);
    v.array = held_by_pointer(*v.type);
    v.dual = inputs ? bool(spec_.differentiated[i]) : is_float(v.dtype);
    v.name = inputs && !v.dual ? ctx.inputs.at(i)
                               : std::string(inputs ? "lsd_in_" : "lsd_out_") + std::to_string(i);
    if (inputs && v.dual && !is_float(v.dtype))
      throw LinkError(forward_->name() + " input " + std::to_string(i) + " is " +
                      v.type->describe() +
                      ": only float32 and float64 inputs carry derivatives (others stay plain)");
    if (!inputs && !v.dtype && !v.array)
      throw LinkError(forward_->name() + " output " + std::to_string(i) + " is " +
                      v.type->describe() +
                      ": a derived gradient needs outputs that are arrays, numbers or objects");
    out.push_back(std::move(v));
  }
  return out;
}

NodeContext DerivativeOp::inner_context(NodeContext const& ctx, std::vector<Variable> const& in,
                                        std::vector<Variable> const& out) const {
  NodeContext inner;
  inner.node_name = ctx.node_name;
  auto const add = [&](Variable const& v, std::string const& macro, bool input) {
    (input ? inner.inputs : inner.outputs).push_back(v.name);
    (input ? inner.input_types : inner.output_types).push_back(v.type);
    (input ? inner.input_dtypes : inner.output_dtypes).push_back(v.dtype);
    if (!v.dual) return;
    int const itemsize = *v.dtype == "float32" ? 4 : 8;
    std::string const dual = dual_name(*v.dtype, spec_.width);
    inner.elements[macro] = {dual, dual + "_typenum()",
                             std::to_string(itemsize * (spec_.width + 1))};
  };
  for (std::size_t i = 0; i < in.size(); ++i) add(in[i], "INPUT_" + std::to_string(i), true);
  for (std::size_t j = 0; j < out.size(); ++j) add(out[j], "OUTPUT_" + std::to_string(j), false);
  // A failure in the op's code ends the pass (its `code_cleanup` still runs), then the driver.
  std::string const id = sub_value(ctx.sub, "id");
  std::string fail = sub_value(ctx.sub, "fail");
  std::string const to_label = "goto __label_" + id + ";";
  auto const at = fail.rfind(to_label);
  if (id.empty() || at == std::string::npos)
    throw std::invalid_argument("a derivative op needs the module writer's failure code");
  inner.sub = ctx.sub;
  inner.sub["fail"] = fail.replace(at, to_label.size(), "goto lsd_end_" + id + ";");
  inner.init_sub = ctx.init_sub;
  return inner;
}

std::size_t count(std::vector<bool> const& flags) {
  return static_cast<std::size_t>(std::count(flags.begin(), flags.end(), true));
}

OpCode DerivativeOp::generate(NodeContext const& ctx) const {
  std::size_t const n = spec_.differentiated.size();
  std::size_t const duals = count(spec_.differentiated);
  // After the op's inputs: the cotangents and values of the outputs with a cotangent
  // (pullback), or the tangents of the differentiated inputs and the float outputs' values.
  std::size_t const extra = pullback() ? 2 * count(spec_.cotangents) : duals + float_outputs();
  if (ctx.inputs.size() != n + extra || ctx.input_types.size() != n + extra)
    throw std::invalid_argument(name() + ": expected " + std::to_string(n + extra) + " inputs");
  std::vector<Variable> const in = variables(ctx, true), out = variables(ctx, false);
  std::size_t const results = pullback() ? duals : float_outputs();
  if (ctx.outputs.size() != results)
    throw std::invalid_argument(name() + ": expected " + std::to_string(results) + " outputs");
  for (std::size_t j = 0; j < out.size(); ++j)
    if (spec_.cotangents[j] && !out[j].dual)
      throw std::invalid_argument(name() + ": output " + std::to_string(j) +
                                  " is not float32 or float64 and has no cotangent");
  OpCode inner = forward_->generate(inner_context(ctx, in, out));
  OpCode code;
  static_cast<BuildFlags&>(code) = static_cast<BuildFlags const&>(inner);
  code.support_code = {dual_header, dual_typedefs(spec_.width)};
  code.support_code.insert(code.support_code.end(), inner.support_code.begin(),
                           inner.support_code.end());
  static_cast<ApplyCode&>(code) = static_cast<ApplyCode const&>(inner);
  code.code_cleanup.clear();  // the op's runs after each of its passes
  code.code = driver(ctx, in, out, inner);
  return code;
}

std::string DerivativeOp::driver(NodeContext const& ctx, std::vector<Variable> const& in,
                                 std::vector<Variable> const& out, OpCode const& inner) const {
  std::string const id = sub_value(ctx.sub, "id");
  std::string t = "{\n// libsection: the " +
                  std::string(pullback() ? "vector-Jacobian" : "Jacobian-vector") +
                  " product of the op below, from its own code run on dual numbers\n"
                  "libsection::derivative<" +
                  std::to_string(spec_.width) + "> lsd_;\n" + setup(ctx, in, out);
  std::string const pass =
      "{\n" + inner.code + "\nlsd_end_" + id + ": ;\n" + inner.code_cleanup + "\n}\n";
  if (pullback())
    t += "while (lsd_.next_pass()) {\n" + pass + "if (__failure) break;\n" + contraction(ctx, out) +
         "}\n";
  else
    t += "do {\n" + pass + "if (__failure) break;\n" + checked_values(ctx, out) + "} while (0);\n";
  return t + "if (!__failure) {\n" + results(ctx, in, out) + "}\nif (__failure) " +
         sub_value(ctx.sub, "fail") + "\n}\n";
}

// The variables the op's code gets in place of its own, then the dual copies of the
// differentiated inputs (and their tangents, for a pushforward).
std::string DerivativeOp::setup(NodeContext const& ctx, std::vector<Variable> const& in,
                                std::vector<Variable> const& out) const {
  std::string declare, fill;
  std::string const fail = sub_value(ctx.sub, "fail") + "\n";
  std::size_t block = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!in[i].dual) continue;
    std::string const dual = dual_name(*in[i].dtype, spec_.width);
    std::string const& plain = ctx.inputs[i];
    std::string const b = std::to_string(block);
    std::string const tangent = pullback() ? "" : ctx.inputs.at(in.size() + block);
    ++block;
    if (in[i].array) {
      declare += "PyArrayObject* " + in[i].name + " = NULL;\nlsd_.own(&" + in[i].name + ");\n";
      fill += "if (!(" + in[i].name + " = lsd_.dual_array<" + dual + ">(" + plain + "))) " + fail;
      if (!pullback()) fill += "if (lsd_.tangent(" + b + ", (PyObject*)" + tangent + ")) " + fail;
    } else {
      declare += dual + " " + in[i].name + ";\n";
      fill += "lsd_.dual_scalar(" + in[i].name + ", (double)" + plain + ");\n";
      if (!pullback()) fill += "lsd_.tangent(" + b + ", (double)" + tangent + ");\n";
    }
  }
  for (auto const& v : out) {
    if (v.array) {
      declare += std::string(v.dtype ? "PyArrayObject* " : "PyObject* ") + v.name +
                 " = NULL;\nlsd_.own(&" + v.name + ");\n";
    } else {
      std::string const type =
          v.dual ? dual_name(*v.dtype, spec_.width) : dtype_info(*v.dtype)->c_type;
      declare += type + " " + v.name + " = 0;\n";
    }
  }
  return declare + fill;
}

// Inside a pass's loop: whether this pass's values of output `j` equal the op's own module's
// (`expected`, an input of the derivative op). They differ only where the code reads or writes
// the duals as plain floats, which makes the derivatives wrong too: refused, the loop left.
std::string DerivativeOp::check_value(NodeContext const& ctx, Variable const& out, std::size_t j,
                                      std::string const& expected) const {
  std::string const failed = " {__failure = " + sub_value(ctx.sub, "id") + "; break;}\n";
  std::string const what = "\"" + where("output " + std::to_string(j)) + "\"";
  if (out.array)
    return "if (lsd_.check_values<" + dual_name(*out.dtype, spec_.width) + ">(" + out.name +
           ", (PyObject*)" + expected + ", " + what + "))" + failed;
  return "if (lsd_.check_values(" + out.name + ", (double)" + expected + ", " + what + "))" +
         failed;
}

// After each pass (pullback): this pass's values of each output with a cotangent checked
// against the op's own (the input after the cotangents), its tangents contracted with the
// cotangent into the gradient.
std::string DerivativeOp::contraction(NodeContext const& ctx,
                                      std::vector<Variable> const& out) const {
  std::string t;
  std::size_t cotangent = spec_.differentiated.size();
  std::size_t value = cotangent + count(spec_.cotangents);
  std::string const failed = " {__failure = " + sub_value(ctx.sub, "id") + "; break;}\n";
  for (std::size_t j = 0; j < out.size(); ++j) {
    if (!spec_.cotangents[j]) continue;
    std::string const& g = ctx.inputs.at(cotangent++);
    t += check_value(ctx, out[j], j, ctx.inputs.at(value++));
    std::string const what = "\"" + where("output " + std::to_string(j)) + "\"";
    if (out[j].array)
      t += "if (lsd_.contract<" + dual_name(*out[j].dtype, spec_.width) + ">(" + out[j].name +
           ", (PyObject*)" + g + ", " + what + "))" + failed;
    else t += "lsd_.contract(" + out[j].name + ", (double)" + g + ");\n";
  }
  return t;
}

// After the pass (pushforward): its values of each float output checked against the op's own
// (the inputs after the tangents).
std::string DerivativeOp::checked_values(NodeContext const& ctx,
                                         std::vector<Variable> const& out) const {
  std::string t;
  std::size_t value = spec_.differentiated.size() + count(spec_.differentiated);
  for (std::size_t j = 0; j < out.size(); ++j)
    if (out[j].dual) t += check_value(ctx, out[j], j, ctx.inputs.at(value++));
  return t;
}

// The derivative op's outputs: the gradient of each differentiated input (pullback) or the
// tangent of each float output (pushforward).
std::string DerivativeOp::results(NodeContext const& ctx, std::vector<Variable> const& in,
                                  std::vector<Variable> const& out) const {
  std::string t;
  std::string const failed = " __failure = " + sub_value(ctx.sub, "id") + ";\n";
  std::size_t k = 0;
  for (std::size_t i = 0; pullback() && i < in.size(); ++i) {
    if (!in[i].dual) continue;
    std::string const& result = ctx.outputs.at(k);
    std::string const b = std::to_string(k++);
    if (in[i].array)
      t += "if (lsd_.gradient(&" + result + ", " + ctx.inputs[i] + ", " + b + "))" + failed;
    else t += result + " = (" + dtype_info(*in[i].dtype)->c_type + ")lsd_.gradient(" + b + ");\n";
  }
  for (std::size_t j = 0; !pullback() && j < out.size(); ++j) {
    if (!out[j].dual) continue;
    std::string const& result = ctx.outputs.at(k++);
    if (out[j].array)
      t += "if (lsd_.output_tangent<" + dual_name(*out[j].dtype, spec_.width) + ">(" + out[j].name +
           ", &" + result + ", \"" + where("output " + std::to_string(j)) + "\"))" + failed;
    else t += result + " = (" + dtype_info(*out[j].dtype)->c_type + ")" + out[j].name + ".d[0];\n";
  }
  return t;
}

}  // namespace

COpPtr make_derivative_op(COpPtr forward, DerivativeSpec spec) {
  if (!forward) throw std::invalid_argument("a derivative op needs its op");
  if (spec.width < 1 || spec.width > max_width)
    throw std::invalid_argument("a derivative's width must be 1 to " + std::to_string(max_width));
  if (spec.mode == DerivativeSpec::Mode::pushforward && spec.width != 1)
    throw std::invalid_argument("a pushforward carries one tangent (width 1)");
  if (spec.cotangents.size() != spec.outputs.size())
    throw std::invalid_argument("a derivative needs one cotangent flag per output");
  if (std::none_of(spec.differentiated.begin(), spec.differentiated.end(),
                   [](bool b) { return b; }))
    throw std::invalid_argument("a derivative needs an input that carries derivatives");
  return std::make_shared<DerivativeOp>(std::move(forward), std::move(spec));
}

}  // namespace section
