// The derivative op of an op (section/linker/generate/derivative.hpp). Its code is the op's own,
// asked for the same apply with the element macros of the differentiated inputs and of the
// float outputs naming numbers that carry derivatives: dual numbers (forward mode,
// generate/dual.h) and taped numbers (reverse mode, generate/tape.h), each compile in a
// namespace of its own (`Numbers::space`), whose `lsd_state` struct holds the op's struct
// sections and runs its code (`pass`), so that each pass starts from a fresh struct. The driver
// (derivative_driver.cpp) makes the copies of the inputs, runs the passes, checks the outputs'
// values against the op's own module's and hands back the gradient or the tangents.
#include "section/linker/generate/derivative.hpp"

#include <algorithm>
#include <stdexcept>

#include "base/hash.hpp"
#include "linker/generate/derivative.hpp"
#include "linker/generate/derivative_rules.h.hpp"
#include "linker/generate/driver.h.hpp"
#include "linker/generate/dual.h.hpp"
#include "linker/generate/forward_driver.h.hpp"
#include "linker/generate/layout.hpp"
#include "linker/generate/number_dtype.h.hpp"
#include "linker/generate/reverse_driver.h.hpp"
#include "linker/generate/tape.h.hpp"

namespace section {

std::string const& derivative_header() {
  static std::string const text = std::string(file_scope_marker) + embedded::derivative_rules_h +
                                  embedded::dual_h + embedded::tape_h + embedded::number_dtype_h +
                                  embedded::driver_h + embedded::forward_driver_h +
                                  embedded::reverse_driver_h;
  return text;
}

// A taped pass and its sweep cost some 3 to 10 calls of the op on plain numbers (more for an
// op whose time is all arithmetic, as a recurrence over arrays), a forward pass of W tangents
// at most 1 + W (less where the compiler vectorises the lanes): forward passes while they cost
// less, at least one. Measured on a recurrence over N points at P = 2N: reverse mode overtakes
// passes of 8 tangents between P = 8 and 12.
int reverse_above(int width) { return width * std::max(1, 10 / (width + 1)); }

namespace derivative {

bool is_float(std::optional<std::string> const& dtype) {
  return dtype == "float32" || dtype == "float64";
}

std::string Numbers::type(std::string const& dtype) const {
  return taped ? "libsection_active_" + dtype
               : "libsection_dual_" + dtype + "_" + std::to_string(width);
}

std::string Numbers::itemsize(std::string const& dtype) const {
  int const scalar = dtype == "float32" ? 4 : 8;
  return std::to_string(taped ? 16 : scalar * (width + 1));
}

}  // namespace derivative

namespace {

using derivative::is_float;
using derivative::Numbers;
using derivative::Variable;

/// Whether the code holds a variable of `type` through a pointer (an array, an object), as the
/// type declares it.
bool held_by_pointer(CType const& type) {
  return type.c_declare("v", {}, true).find('*') != std::string::npos;
}

/// The module's number types (one name each, so macros never see a template's comma) and the
/// type numbers of their arrays.
std::string number_typedefs(std::vector<Numbers> const& kinds) {
  std::string out;
  for (auto const& kind : kinds) {
    for (auto const& [dtype, c_type] :
         {std::pair{"float64", "npy_float64"}, std::pair{"float32", "npy_float32"}}) {
      std::string const name = kind.type(dtype);
      std::string const type = kind.taped ? "libsection::active<" + std::string(c_type) + ">"
                                          : "libsection::dual<" + std::string(c_type) + ", " +
                                                std::to_string(kind.width) + ">";
      out += "typedef " + type + " " + name + ";\nstatic inline int " + name +
             "_typenum(void) { return libsection::number_dtype<" + name + ">::typenum(); }\n";
    }
  }
  return out;
}

/// The files the op's code comes from, as its `#line` directives name them (for messages).
std::string files_of(OpCode const& code) {
  std::vector<std::string> files;
  for (std::string const* text :
       {&code.code, &code.support_code_apply, &code.support_code_struct, &code.code_cleanup}) {
    for (std::size_t at = text->find("#line "); at != std::string::npos;
         at = text->find("#line ", at + 1)) {
      std::size_t const open = text->find('"', at), end = text->find('\n', at);
      std::size_t const close = open < end ? text->find('"', open + 1) : std::string::npos;
      if (close == std::string::npos || close > end) continue;
      std::string const file = text->substr(open + 1, close - open - 1);
      bool const generated = file.empty() || file.front() == '<';  // `<libsection-module>`
      if (!generated && std::find(files.begin(), files.end(), file) == files.end())
        files.push_back(file);
    }
  }
  std::string out;
  for (auto const& f : files) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "its C code" : out;
}

/// `struct lsd_state`: the op's struct sections as its members, `init` and `cleanup` of its
/// struct code, and `pass`, the op's code and code_cleanup on the variables it is given (each
/// a template parameter, so that no type needs spelling).
std::string state_struct(OpCode const& inner, std::size_t inputs, std::size_t outputs, bool params,
                         std::string const& id) {
  std::string types, parameters;
  auto const add = [&](std::string const& t, std::string const& name) {
    types += std::string(types.empty() ? "" : ", ") + "class " + t;
    parameters += std::string(parameters.empty() ? "" : ", ") + t + "& " + name;
  };
  for (std::size_t i = 0; i < inputs; ++i) add("I" + std::to_string(i), Variable::inner_input(i));
  for (std::size_t j = 0; j < outputs; ++j) add("O" + std::to_string(j), Variable::inner_output(j));
  if (params) add("P", "lsd_params");
  std::string const init =
      params ? "template <class P> int init(P& lsd_params) {\n" : "int init() {\n";
  return "struct lsd_state {\n" + inner.support_code_struct + "\n" + init + "{\n" +
         inner.init_code_struct + "\n}\nreturn 0;\n}\nvoid cleanup() {\n{\n" +
         inner.cleanup_code_struct + "\n}\n}\ntemplate <" + types + ">\nint pass(" + parameters +
         ") {\nint __failure = 0;\n{\n" + inner.code + "\nlsd_end_" + id + ": ;\n" +
         inner.code_cleanup + "\n}\nreturn __failure;\n}\n};\n";
}

}  // namespace

namespace derivative {

DerivativeOp::DerivativeOp(COpPtr forward, DerivativeSpec spec)
    : forward_(std::move(forward)), spec_(std::move(spec)) {
  if (record()) {  // the op's own numbers, and taped ones for a pullback to sweep
    kinds_.push_back({false, 0, "lsd_plain_", true});
    kinds_.push_back({true, 0, "lsd_taped_"});
    return;
  }
  if (!pullback() || spec_.method != DerivativeSpec::Method::reverse)
    kinds_.push_back({false, pullback() ? spec_.width : 1, "lsd_dual_"});
  if (pullback() && spec_.method != DerivativeSpec::Method::forward)
    kinds_.push_back({true, 0, "lsd_taped_"});
}

std::string DerivativeOp::name() const {
  return forward_->name() + (pullback() ? ".pullback" : record() ? ".record" : ".pushforward");
}

// What names a recording (DerivativeSpec::Mode::record) for the pullbacks that may sweep it:
// the hash of the op's code on taped numbers, asked with a context that names nothing of one
// module (its apply's id and name, the names of its plain inputs), so that the record op and
// the pullback, each in a module of its own, find the same. Which inputs are differentiated is
// in it (their element macros).
std::string DerivativeOp::recording_identity(NodeContext const& ctx,
                                             std::vector<Variable> const& in,
                                             std::vector<Variable> const& out) const {
  NodeContext canonical = ctx;
  canonical.node_name = "lsd_recorded";
  for (auto* sub : {&canonical.sub, &canonical.init_sub}) {
    (*sub)["id"] = "1";
    (*sub)["fail"] = "{__failure = 1; goto __label_1;}";
  }
  std::vector<Variable> named = in;
  for (std::size_t i = 0; i < named.size(); ++i)
    if (!named[i].dual) named[i].name = "lsd_plain_in_" + std::to_string(i);
  OpCode const code = forward_->generate(inner_context(canonical, named, out, kind(true)));
  std::string text = forward_->name() + "\n";
  for (auto const& part : code.support_code) text += part + "\n";
  for (std::string const* part :
       {&code.support_code_apply, &code.support_code_struct, &code.init_code_struct,
        &code.cleanup_code_struct, &code.code, &code.code_cleanup})
    text += *part + "\n";
  return detail::sha256_hex(text).substr(0, 32);
}

std::size_t DerivativeOp::float_outputs() const {
  return static_cast<std::size_t>(std::count_if(spec_.outputs.begin(), spec_.outputs.end(),
                                                [](auto& t) { return is_float(dtype_name(*t)); }));
}

// The op's inputs (from the apply: the derivative's first inputs are the op's) or outputs (from
// the spec), each named and typed as the driver holds it.
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
             : inputs          ? Variable::inner_input(i)
                               : Variable::inner_output(i);
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

// The context the op's code is asked with for `kind`: every variable a parameter of
// `lsd_state::pass` (`lsd_in_0`, `lsd_out_0`, `lsd_params`), the element macros of those that
// carry derivatives naming `kind`'s numbers, and a failure that ends the pass (its
// `code_cleanup` still runs), then the driver.
NodeContext DerivativeOp::inner_context(NodeContext const& ctx, std::vector<Variable> const& in,
                                        std::vector<Variable> const& out,
                                        Numbers const& kind) const {
  NodeContext inner;
  inner.node_name = ctx.node_name;
  auto const add = [&](Variable const& v, std::string const& name, std::string const& macro,
                       bool input) {
    (input ? inner.inputs : inner.outputs).push_back(name);
    (input ? inner.input_types : inner.output_types).push_back(v.type);
    (input ? inner.input_dtypes : inner.output_dtypes).push_back(v.dtype);
    if (!v.dual) return;
    std::string const type = kind.type(*v.dtype);
    inner.elements[macro] = {type, type + "_typenum()", kind.itemsize(*v.dtype)};
  };
  for (std::size_t i = 0; i < in.size(); ++i)
    add(in[i], Variable::inner_input(i), "INPUT_" + std::to_string(i), true);
  for (std::size_t j = 0; j < out.size(); ++j)
    add(out[j], Variable::inner_output(j), "OUTPUT_" + std::to_string(j), false);
  std::string const id = sub_value(ctx.sub, "id");
  std::string fail = sub_value(ctx.sub, "fail");
  std::string const to_label = "goto __label_" + id + ";";
  auto const at = fail.rfind(to_label);
  if (id.empty() || at == std::string::npos)
    throw std::invalid_argument("a derivative op needs the module writer's failure code");
  inner.sub = ctx.sub;
  inner.sub["fail"] = fail.replace(at, to_label.size(), "goto lsd_end_" + id + ";");
  inner.init_sub = ctx.init_sub;
  if (ctx.sub.count("params")) inner.sub["params"] = inner.init_sub["params"] = "lsd_params";
  return inner;
}

std::vector<Variable> plain(std::vector<Variable> vars, std::vector<std::string> const& names) {
  for (std::size_t k = 0; k < vars.size(); ++k) {
    vars[k].dual = false;
    vars[k].name = names.at(k);
  }
  return vars;
}

std::size_t count_set(std::vector<bool> const& flags) {
  return static_cast<std::size_t>(std::count(flags.begin(), flags.end(), true));
}

// The node's variables as the driver holds them, after checking that the apply has the inputs
// and outputs the spec says.
std::pair<std::vector<Variable>, std::vector<Variable>> DerivativeOp::checked_variables(
    NodeContext const& ctx) const {
  std::size_t const n = spec_.differentiated.size();
  std::size_t const duals = count_set(spec_.differentiated);
  // After the op's inputs: the cotangents and values of the outputs with a cotangent
  // (pullback), or the tangents of the differentiated inputs and the float outputs' values.
  std::size_t const extra = record()     ? 0
                            : pullback() ? 2 * count_set(spec_.cotangents)
                                         : duals + float_outputs();
  if (ctx.inputs.size() != n + extra || ctx.input_types.size() != n + extra)
    throw std::invalid_argument(name() + ": expected " + std::to_string(n + extra) + " inputs");
  std::vector<Variable> in = variables(ctx, true), out = variables(ctx, false);
  std::size_t const results = record() ? out.size() : pullback() ? duals : float_outputs();
  if (ctx.outputs.size() != results)
    throw std::invalid_argument(name() + ": expected " + std::to_string(results) + " outputs");
  for (std::size_t j = 0; j < out.size(); ++j)
    if (spec_.cotangents[j] && !out[j].dual)
      throw std::invalid_argument(name() + ": output " + std::to_string(j) +
                                  " is not float32 or float64 and has no cotangent");
  return {std::move(in), std::move(out)};
}

// What the instance keeps between calls: the copies' arrays, the tape, whether a fall-back on
// forward passes was told, and a record op's comparison of its taped values with the plain
// pass's (values that differ leave the instance on plain passes, `lsd_plain_<id>`, and its
// pullbacks to their own tapes) and the op's state for its plain passes (`lsd_own_<id>`).
std::string DerivativeOp::struct_members(std::string const& id) const {
  std::string t = "libsection::kept_arrays lsd_kept_" + id + ";\n";
  if (pullback() && spec_.method != DerivativeSpec::Method::forward)
    t += "libsection::tape lsd_tape_" + id + ";\n";
  if (has(true) && has(false)) t += "bool lsd_told_" + id + " = false;\n";
  if (record())
    t += "bool lsd_compared_" + id + " = false;\nbool lsd_plain_" + id + " = false;\n" +
         "std::unique_ptr<" + kinds_.front().space + id + "::lsd_state> lsd_own_" + id + ";\n";
  return t;
}

OpCode DerivativeOp::generate(NodeContext const& ctx) const {
  auto const [in, out] = checked_variables(ctx);
  OpCode code;
  code.library_code = {derivative_header(), number_typedefs(kinds_)};
  std::string const id = sub_value(ctx.sub, "id");
  std::string files;
  for (auto const& kind : kinds_) {
    OpCode const inner = forward_->generate(
        kind.plain ? inner_context(ctx, plain(in, ctx.inputs), plain(out, ctx.outputs), kind)
                   : inner_context(ctx, in, out, kind));
    if (&kind == &kinds_.front()) {
      static_cast<BuildFlags&>(code) = static_cast<BuildFlags const&>(inner);
      code.init_code = inner.init_code;
      files = files_of(inner);
    }
    for (auto const& s : inner.support_code)
      if (std::find(code.support_code.begin(), code.support_code.end(), s) ==
          code.support_code.end())
        code.support_code.push_back(s);
    std::string const space = kind.space + id;
    code.support_code_apply +=
        "namespace " + space + " {\n" + inner.support_code_apply + "\n" +
        state_struct(inner, in.size(), out.size(), ctx.sub.count("params") > 0, id) +
        "}  // namespace " + space + "\n";
    code.init_code_apply += "{\nusing namespace " + space + ";\n" + inner.init_code_apply + "\n}\n";
  }
  code.support_code_struct = struct_members(id);
  if (record())
    code.cleanup_code_struct = "if (lsd_own_" + id + ") {\nlsd_own_" + id +
                               "->cleanup();\nlsd_own_" + id + ".reset();\n}\n";
  // Ops with params are not recorded: their values are not in the inputs' fingerprint.
  bool const recorded = has(true) && !ctx.sub.count("params") && (record() || pullback());
  std::string const identity = recorded ? recording_identity(ctx, in, out) : "";
  code.code =
      record() ? record_driver(ctx, in, out, identity) : driver(ctx, in, out, files, identity);
  return code;
}

}  // namespace derivative

COpPtr make_derivative_op(COpPtr forward, DerivativeSpec spec) {
  if (!forward) throw std::invalid_argument("a derivative op needs its op");
  if (spec.width < 1 || spec.width > max_width)
    throw std::invalid_argument("a derivative's width must be 1 to " + std::to_string(max_width));
  if (spec.mode == DerivativeSpec::Mode::pushforward && spec.width != 1)
    throw std::invalid_argument("a pushforward carries one tangent (width 1)");
  if (spec.mode == DerivativeSpec::Mode::pushforward &&
      spec.method == DerivativeSpec::Method::reverse)
    throw std::invalid_argument("a pushforward is computed in forward mode");
  if (spec.cotangents.size() != spec.outputs.size())
    throw std::invalid_argument("a derivative needs one cotangent flag per output");
  if (std::none_of(spec.differentiated.begin(), spec.differentiated.end(),
                   [](bool b) { return b; }))
    throw std::invalid_argument("a derivative needs an input that carries derivatives");
  return std::make_shared<derivative::DerivativeOp>(std::move(forward), std::move(spec));
}

}  // namespace section
