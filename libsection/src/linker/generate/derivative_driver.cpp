// The driver of a derivative op (linker/generate/derivative.hpp): the code of its apply, which
// runs the op's code (`lsd_state::pass` of one of its compiles) through the drivers of
// generate/forward_driver.h and reverse_driver.h. A pullback of both compiles picks per call:
// forward passes for few differentiated scalars, one taped pass and its sweep for many, and
// forward passes again when the tape would outgrow its limit.
#include <algorithm>
#include <string>

#include "linker/generate/derivative.hpp"
#include "linker/generate/layout.hpp"

namespace section::derivative {

namespace {

/// What a check inside a pass's loop does when it fails: records the failure, leaves the loop.
std::string failed(NodeContext const& ctx) {
  return " {__failure = " + sub_value(ctx.sub, "id") + "; break;}\n";
}

std::string quoted(std::string const& text) { return "\"" + escape_for_c_string(text) + "\""; }

}  // namespace

std::string DerivativeOp::where(std::string const& what) const {
  return quoted(forward_->name() + " " + what);
}

std::string DerivativeOp::driver(NodeContext const& ctx, std::vector<Variable> const& in,
                                 std::vector<Variable> const& out, std::string const& files,
                                 std::string const& identity) const {
  std::string const fail = sub_value(ctx.sub, "fail");
  std::string t = "{\n// libsection: the " +
                  std::string(pullback() ? "vector-Jacobian" : "Jacobian-vector") +
                  " product of the op below, from its own code run on numbers that carry "
                  "derivatives\nlibsection::gil_held lsd_gil;\n";
  if (!pullback()) return t + forward_block(ctx, in, out) + "if (__failure) " + fail + "\n}\n";
  t += "libsection::derivative_settings lsd_settings;\nif (lsd_settings.read()) " + fail + "\n";
  if (!has(true)) return t + forward_block(ctx, in, out) + "if (__failure) " + fail + "\n}\n";
  t += "bool lsd_forward = false;\n";
  if (has(false))
    t += "lsd_forward = lsd_settings.mode == libsection::derivative_settings::forward ||\n"
         "  (lsd_settings.mode == libsection::derivative_settings::automatic && " +
         scalar_count(ctx, in) + " <= " + std::to_string(reverse_above(spec_.width)) + ");\n";
  t += "if (!lsd_forward) {\n" + reverse_block(ctx, in, out, files, identity) + "}\n";
  if (has(false)) t += "if (lsd_forward && !__failure) {\n" + forward_block(ctx, in, out) + "}\n";
  return t + "if (__failure) " + fail + "\n}\n";
}

// The number of differentiated scalars of this call: the sizes of the differentiated inputs.
std::string DerivativeOp::scalar_count(NodeContext const& ctx,
                                       std::vector<Variable> const& in) const {
  std::string t = "(npy_intp)0";
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i].dual) t += in[i].array ? " + PyArray_SIZE(" + ctx.inputs[i] + ")" : " + 1";
  return "(" + t + ")";
}

// Forward passes of dual numbers: ceil(P / W) for a pullback, one for a pushforward.
std::string DerivativeOp::forward_block(NodeContext const& ctx, std::vector<Variable> const& in,
                                        std::vector<Variable> const& out) const {
  Numbers const& duals = kind(false);
  std::string const one = pass(ctx, in, out, duals);
  std::string t = "{\nlibsection::forward_passes<" + std::to_string(duals.width) + "> lsd_;\n" +
                  declare(ctx, in, out, duals) + fill(ctx, in, duals);
  if (pullback())
    t += "while (lsd_.next_pass()) {\n" + one + "if (__failure) break;\n" + contraction(ctx, out) +
         "}\n";
  else
    t += "do {\n" + one + "if (__failure) break;\n" + checked_values(ctx, out, duals) +
         "} while (0);\n";
  return t + "if (!__failure) {\n" + results(ctx, in, out) + "}\n}\n";
}

// One taped pass, the outputs' values checked, their adjoints seeded with the cotangents, the
// sweep and the gradient; or, when the tape outgrew its limit, `lsd_forward` for forward passes
// (told once per instance, `lsd_told_<id>`). With an `identity`, a recording of these inputs
// (a record op's taped pass, DerivativeSpec::Mode::record) is swept in place of a pass of its
// own; it is handed back to the runtime after, for another pullback of the same values.
std::string DerivativeOp::reverse_block(NodeContext const& ctx, std::vector<Variable> const& in,
                                        std::vector<Variable> const& out, std::string const& files,
                                        std::string const& identity) const {
  Numbers const& taped = kind(true);
  std::string const id = sub_value(ctx.sub, "id");
  std::string const op = quoted(name()), from = quoted(files);
  std::string const forced =
      has(false) ? "lsd_settings.mode == libsection::derivative_settings::reverse" : "true";
  std::string t = "{\n";
  if (!identity.empty())
    t += "libsection::fingerprint lsd_inputs;\n" + fingerprint(ctx, in) +
         "libsection::held_recording lsd_found(" + quoted(identity) +
         ", libsection::recording_of(" + quoted(identity) + ", lsd_inputs));\n";
  std::string const tape = identity.empty()
                               ? "lsd_tape_" + id
                               : "(lsd_found.r ? lsd_found.r->taped : lsd_tape_" + id + ")";
  t += "libsection::reverse_pass lsd_(" + tape + ", lsd_settings.tape_max_bytes, " +
       (identity.empty() ? "NULL" : "lsd_found.r") + ");\n" + declare(ctx, in, out, taped) +
       "do {\n";
  std::string run = fill(ctx, in, taped) + pass(ctx, in, out, taped) + "if (__failure) break;\n";
  if (!identity.empty()) {
    std::string adopt = "lsd_.adopt();\n";
    std::size_t k = 0;
    for (auto const& v : out) {
      if (!v.dual) continue;
      std::string const kk = std::to_string(k++);
      adopt += v.array ? "if (!(" + v.name + " = lsd_.recorded_output(" + kk + ")))" + failed(ctx)
                       : "lsd_.recorded_scalar(" + v.name + ", " + kk + ");\n";
    }
    run = "if (lsd_found.r) {\n" + adopt + "} else {\n" + run + "}\n";
  }
  t += run + "if (lsd_.usable(" + op + ", " + from + ", " + forced + "))" + failed(ctx);
  if (has(false))
    t += "if (lsd_.full()) {\nif (lsd_.fell_back(" + op + ", " + from + ", " +
         scalar_count(ctx, in) + ", " + std::to_string(kind(false).width) + ", lsd_told_" + id +
         "))" + failed(ctx) + "lsd_forward = true;\nbreak;\n}\n";
  t += seeds(ctx, out, forced) + "if (lsd_.sweep(" + op + ", " + from + "))" + failed(ctx) +
       results(ctx, in, out) + "} while (0);\n}\n";
  return t;
}

// The bytes of the op's inputs, into `lsd_inputs`: what a recording is found by.
std::string DerivativeOp::fingerprint(NodeContext const& ctx,
                                      std::vector<Variable> const& in) const {
  std::string t;
  for (std::size_t i = 0; i < in.size(); ++i)
    t += in[i].array
             ? "if (lsd_inputs.add(" + ctx.inputs[i] + ")) " + sub_value(ctx.sub, "fail") + "\n"
             : "lsd_inputs.add(" + ctx.inputs[i] + ");\n";
  return t;
}

// A record op's code (DerivativeSpec::Mode::record): where its pullback will take reverse mode
// (as an automatic pullback decides), one taped pass, whose values become the op's outputs and
// whose tape is handed to the runtime's recordings, found there by the pullback of the same
// inputs; else the op's code on plain numbers. The first taped call runs the plain pass too
// and compares: values that differ (the code reads the numbers as plain floats, or a compiler
// contracts them differently past the check's tolerance) leave the instance on plain passes.
std::string DerivativeOp::record_driver(NodeContext const& ctx, std::vector<Variable> const& in,
                                        std::vector<Variable> const& out,
                                        std::string const& identity) const {
  Numbers const& taped = kind(true);
  std::string const id = sub_value(ctx.sub, "id");
  std::string const fail = sub_value(ctx.sub, "fail");
  std::string const plain_pass = own_pass(ctx, in, out);
  std::string t =
      "{\n// libsection: the op's values, from a taped pass its pullback sweeps, or plain\n"
      "libsection::gil_held lsd_gil;\nlibsection::derivative_settings lsd_settings;\nif "
      "(lsd_settings.read()) " +
      fail + "\n";
  if (identity.empty()) return t + plain_pass + "if (__failure) " + fail + "\n}\n";
  // Not in a batch (`__batch`, the module's run): each row would leave a recording, more than
  // the runtime keeps, and the rows' pullbacks would find few of them.
  t += "bool const lsd_taped = !lsd_plain_" + id +
       " && !__batch && (lsd_settings.mode == libsection::derivative_settings::reverse ||\n"
       "  (lsd_settings.mode == libsection::derivative_settings::automatic && " +
       scalar_count(ctx, in) + " > " + std::to_string(reverse_above(spec_.width)) + "));\n";
  t += "if (!lsd_taped) {\n" + plain_pass + "} else {\n";
  // The outputs from the taped pass's numbers (their values), or moved as they are.
  std::string outputs;
  for (std::size_t j = 0; j < out.size(); ++j) {
    std::string const& o = ctx.outputs[j];
    std::string const& v = out[j].name;
    std::string const what = where("output " + std::to_string(j));
    if (out[j].dual && out[j].array)
      outputs += "if (lsd_.plain_output<" + taped.type(*out[j].dtype) + ">(" + v + ", &" + o +
                 ", " + what + "))" + failed(ctx);
    else if (out[j].dual)
      outputs += o + " = (" + dtype_info(*out[j].dtype)->c_type + ")" + v + ".v;\n";
    else if (out[j].array)
      outputs += "Py_XDECREF(" + o + ");\n" + o + " = " + v + ";\n" + v + " = NULL;\n";
    else outputs += o + " = " + v + ";\n";
  }
  std::string compare;  // the taped pass's values against the plain pass's
  for (std::size_t j = 0; j < out.size(); ++j)
    if (out[j].dual)
      compare += "if (!lsd_.same_as_plain" +
                 (out[j].array ? "<" + taped.type(*out[j].dtype) + ">(" : std::string("(")) +
                 out[j].name + ", " + ctx.outputs[j] + ")) lsd_same = false;\n";
  std::string keep = "if (lsd_.complete()) {\n";
  for (auto const& v : out)
    if (v.dual) keep += "if (lsd_.keep_output(" + v.name + "))" + failed(ctx);
  keep += "lsd_.keep(*lsd_held.r, lsd_inputs);\n}\n";
  t += "libsection::fingerprint lsd_inputs;\n" + fingerprint(ctx, in) +
       "libsection::held_recording lsd_held(" + quoted(identity) +
       ", libsection::recording_to_fill(" + quoted(identity) + "));\nif (!lsd_held.r) " + fail +
       "\n{\nlibsection::reverse_pass lsd_(*lsd_held.r, lsd_settings.tape_max_bytes);\n" +
       declare(ctx, in, out, taped) + "do {\n" + fill(ctx, in, taped) + pass(ctx, in, out, taped) +
       "if (__failure) break;\nif (!lsd_compared_" + id + ") {\n" + plain_pass +
       "if (__failure) break;\nbool lsd_same = true;\n" + compare + "lsd_compared_" + id +
       " = true;\nif (!lsd_same) {\nlsd_plain_" + id + " = true;\nbreak;\n}\n} else {\n" + outputs +
       "}\n" + keep + "} while (0);\n}\n}\n";
  return t + "if (__failure) " + fail + "\n}\n";
}

// The variables the op's code gets in place of its own (and the instance's arrays their copies
// go into).
std::string DerivativeOp::declare(NodeContext const& ctx, std::vector<Variable> const& in,
                                  std::vector<Variable> const& out, Numbers const& kind) const {
  std::string t = "lsd_.keep_in(lsd_kept_" + sub_value(ctx.sub, "id") + ");\n";
  for (auto const& v : in) {
    if (!v.dual) continue;
    if (v.array) t += "PyArrayObject* " + v.name + " = NULL;\nlsd_.own(&" + v.name + ");\n";
    else t += kind.type(*v.dtype) + " " + v.name + ";\n";
  }
  for (auto const& v : out) {
    if (v.array) {
      t += std::string(v.dtype ? "PyArrayObject* " : "PyObject* ") + v.name +
           " = NULL;\nlsd_.own(&" + v.name + ");\n";
    } else {
      std::string const type = v.dual ? kind.type(*v.dtype) : dtype_info(*v.dtype)->c_type;
      t += type + " " + v.name + " = 0;\n";
    }
  }
  return t;
}

// The copies of the differentiated inputs in `kind`'s numbers (and their tangents, for a
// pushforward).
std::string DerivativeOp::fill(NodeContext const& ctx, std::vector<Variable> const& in,
                               Numbers const& kind) const {
  std::string t;
  std::string const fail = sub_value(ctx.sub, "fail") + "\n";
  bool const tangents = spec_.mode == DerivativeSpec::Mode::pushforward;
  std::size_t block = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!in[i].dual) continue;
    std::string const type = kind.type(*in[i].dtype);
    std::string const& plain = ctx.inputs[i];
    std::string const b = std::to_string(block);
    std::string const tangent = !tangents ? "" : ctx.inputs.at(in.size() + block);
    ++block;
    if (in[i].array) {
      t += "if (!(" + in[i].name + " = lsd_." + (kind.taped ? "active" : "dual") + "_array<" +
           type + ">(" + plain + "))) " + fail;
      if (tangents) t += "if (lsd_.tangent(" + b + ", (PyObject*)" + tangent + ")) " + fail;
    } else {
      t += "lsd_." + std::string(kind.taped ? "active" : "dual") + "_scalar(" + in[i].name +
           ", (double)" + plain + ");\n";
      if (tangents) t += "lsd_.tangent(" + b + ", (double)" + tangent + ");\n";
    }
  }
  return t;
}

// One pass of the op's code on `kind`'s numbers, its struct afresh: init_code_struct,
// the code and code_cleanup, cleanup_code_struct (as an instance's life, in one pass).
std::string DerivativeOp::pass(NodeContext const& ctx, std::vector<Variable> const& in,
                               std::vector<Variable> const& out, Numbers const& kind) const {
  std::string const id = sub_value(ctx.sub, "id");
  std::string const state = kind.space + id + "::lsd_state";
  std::string const params = ctx.sub.count("params") ? sub_value(ctx.sub, "params") : "";
  return std::string("{\nlibsection::gil_given lsd_free;\n") +
         (kind.taped ? "libsection::tape_scope lsd_scope(lsd_.taped_on());\n" : "") +
         "std::unique_ptr<" + state + "> lsd_state(new " + state + "());\n" +
         "int lsd_failed = lsd_state->init(" + params + ");\n" +
         "if (!lsd_failed) lsd_failed = lsd_state->pass(" + pass_arguments(ctx, in, out) + ");\n" +
         "lsd_state->cleanup();\nif (lsd_failed) __failure = " + id + ";\n}\n";
}

// A record op's pass on the op's own numbers: in one state the instance keeps (`lsd_own_<id>`,
// made at the first call, cleaned up with the instance), as the op's own module keeps its
// struct, so an op with a costly `init_code_struct` pays it once.
std::string DerivativeOp::own_pass(NodeContext const& ctx, std::vector<Variable> const& in,
                                   std::vector<Variable> const& out) const {
  std::string const id = sub_value(ctx.sub, "id");
  std::string const state = kinds_.front().space + id + "::lsd_state";
  std::string const kept = "lsd_own_" + id;
  std::string const params = ctx.sub.count("params") ? sub_value(ctx.sub, "params") : "";
  return "{\nlibsection::gil_given lsd_free;\nif (!" + kept + ") {\n" + kept + ".reset(new " +
         state + "());\nif (" + kept + "->init(" + params + ")) {\n" + kept + "->cleanup();\n" +
         kept + ".reset();\n__failure = " + id + ";\n}\n}\nif (" + kept + " && " + kept +
         "->pass(" + pass_arguments(ctx, plain(in, ctx.inputs), plain(out, ctx.outputs)) +
         ")) __failure = " + id + ";\n}\n";
}

std::string DerivativeOp::pass_arguments(NodeContext const& ctx, std::vector<Variable> const& in,
                                         std::vector<Variable> const& out) const {
  std::string args;
  for (auto const& v : in) args += (args.empty() ? "" : ", ") + v.name;
  for (auto const& v : out) args += ", " + v.name;
  if (ctx.sub.count("params")) args += ", " + sub_value(ctx.sub, "params");
  return args;
}

// Inside a pass's loop: whether this pass's values of output `j` equal the op's own module's
// (`expected`, an input of the derivative op). They differ only where the code reads or writes
// the numbers as plain floats, which makes the derivatives wrong too: refused, the loop left.
std::string DerivativeOp::check_value(Variable const& out, std::size_t j,
                                      std::string const& expected, Numbers const& kind,
                                      std::string const& on_fail) const {
  std::string const what = where("output " + std::to_string(j));
  if (out.array)
    return "if (lsd_.check_values<" + kind.type(*out.dtype) + ">(" + out.name + ", (PyObject*)" +
           expected + ", " + what + "))" + on_fail;
  return "if (lsd_.check_values(" + out.name + ", (double)" + expected + ", " + what + "))" +
         on_fail;
}

// After each forward pass (pullback): this pass's values of each output with a cotangent
// checked against the op's own (the input after the cotangents), its tangents contracted with
// the cotangent into the gradient.
std::string DerivativeOp::contraction(NodeContext const& ctx,
                                      std::vector<Variable> const& out) const {
  Numbers const& duals = kind(false);
  std::string t;
  std::size_t cotangent = spec_.differentiated.size();
  std::size_t value = cotangent + count_set(spec_.cotangents);
  for (std::size_t j = 0; j < out.size(); ++j) {
    if (!spec_.cotangents[j]) continue;
    std::string const& g = ctx.inputs.at(cotangent++);
    t += check_value(out[j], j, ctx.inputs.at(value++), duals, failed(ctx));
    if (out[j].array)
      t += "if (lsd_.contract<" + duals.type(*out[j].dtype) + ">(" + out[j].name + ", (PyObject*)" +
           g + ", " + where("output " + std::to_string(j)) + "))" + failed(ctx);
    else t += "lsd_.contract(" + out[j].name + ", (double)" + g + ");\n";
  }
  return t;
}

// After the taped pass: each output with a cotangent checked against the op's own, then its
// elements' adjoints seeded with the cotangent. A taped pass records between the operations,
// so a compiler contracting `a * b + c` (-ffp-contract=fast, PyTensor's flags) does so less
// than in the op's own module: in a chaotic recurrence the rounding grows past the check's
// tolerance. Where forward passes are at hand, a call whose values differ takes them (their
// values are checked in turn).
std::string DerivativeOp::seeds(NodeContext const& ctx, std::vector<Variable> const& out,
                                std::string const& forced) const {
  Numbers const& taped = kind(true);
  std::string const on_fail = has(false) ? " {\n  if (" + forced +
                                               ") __failure = " + sub_value(ctx.sub, "id") +
                                               ";\n  else {\n    PyErr_Clear();\n    "
                                               "lsd_forward = true;\n  }\n  break;\n}\n"
                                         : failed(ctx);
  std::string checks, t;
  std::size_t cotangent = spec_.differentiated.size();
  std::size_t value = cotangent + count_set(spec_.cotangents);
  for (std::size_t j = 0; j < out.size(); ++j) {
    if (!spec_.cotangents[j]) continue;
    std::string const& g = ctx.inputs.at(cotangent++);
    checks += check_value(out[j], j, ctx.inputs.at(value++), taped, on_fail);
    if (out[j].array)
      t += "if (lsd_.seed<" + taped.type(*out[j].dtype) + ">(" + out[j].name + ", (PyObject*)" + g +
           ", " + where("output " + std::to_string(j)) + "))" + failed(ctx);
    else t += "if (lsd_.seed(" + out[j].name + ", (double)" + g + "))" + failed(ctx);
  }
  return checks + t;
}

// After the pass (pushforward): its values of each float output checked against the op's own
// (the inputs after the tangents).
std::string DerivativeOp::checked_values(NodeContext const& ctx, std::vector<Variable> const& out,
                                         Numbers const& kind) const {
  std::string t;
  std::size_t value = spec_.differentiated.size() + count_set(spec_.differentiated);
  for (std::size_t j = 0; j < out.size(); ++j)
    if (out[j].dual) t += check_value(out[j], j, ctx.inputs.at(value++), kind, failed(ctx));
  return t;
}

// The derivative op's outputs: the gradient of each differentiated input (pullback) or the
// tangent of each float output (pushforward).
std::string DerivativeOp::results(NodeContext const& ctx, std::vector<Variable> const& in,
                                  std::vector<Variable> const& out) const {
  std::string t;
  std::string const failure = " __failure = " + sub_value(ctx.sub, "id") + ";\n";
  std::size_t k = 0;
  for (std::size_t i = 0; pullback() && i < in.size(); ++i) {
    if (!in[i].dual) continue;
    std::string const& result = ctx.outputs.at(k);
    std::string const b = std::to_string(k++);
    if (in[i].array)
      t += "if (lsd_.gradient(&" + result + ", " + ctx.inputs[i] + ", " + b + "))" + failure;
    else t += result + " = (" + dtype_info(*in[i].dtype)->c_type + ")lsd_.gradient(" + b + ");\n";
  }
  for (std::size_t j = 0; !pullback() && j < out.size(); ++j) {
    if (!out[j].dual) continue;
    std::string const& result = ctx.outputs.at(k++);
    if (out[j].array)
      t += "if (lsd_.output_tangent<" + kind(false).type(*out[j].dtype) + ">(" + out[j].name +
           ", &" + result + ", " + where("output " + std::to_string(j)) + "))" + failure;
    else t += result + " = (" + dtype_info(*out[j].dtype)->c_type + ")" + out[j].name + ".d[0];\n";
  }
  return t;
}

}  // namespace section::derivative
