// The linker core end to end, its face: section files → op → module source (linker/generate/)
// → compile flags, key and compile (linker/build/) → cached shared object (linker/cache/).
// Loading the object and calling it needs a Python interpreter; that part is in libsection._core.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "section/ctype.hpp"
#include "section/linker/build/build.hpp"
#include "section/linker/generate/derivative.hpp"
#include "section/linker/generate/module.hpp"
#include "section/op.hpp"
#include "section/parse.hpp"

namespace section {

/// A value of the wrong kind for an input of the op's main function: a scalar type where the
/// function takes an array, or the other way round (Python: `TypeError`).
class InputTypeError : public LinkError {
 public:
  using LinkError::LinkError;
};

/// A cast in an op's files that reads an array's elements through a plain floating type
/// (SL306): its diagnostic, and the input whose data it reads (none for an output's, or an
/// array the files do not name).
struct HiddenValue {
  Diagnostic diagnostic;
  std::optional<std::size_t> input;
};

/// An op implemented by section files (an `ExternalCOp` without PyTensor).
class SectionOp final : public COp {
 public:
  /// `sm` holds the files `sections` were loaded from (also used to map compile errors);
  /// `flags` are what the op adds to its module's build (its `c_compile_args`, ...).
  /// Throws `signature_error` for a name, func_name or padding that cannot go into C.
  SectionOp(OpDescription op, std::shared_ptr<SourceManager const> sm, SectionSet sections,
            ExpandOptions options = {}, BuildFlags flags = {});
  std::string name() const override { return op_.name; }
  /// The expansion's strings as an op's code; throws `LinkError` for an expansion with errors or
  /// without a `c_code`.
  OpCode generate(NodeContext const& node) const override;
  /// The expansion for one apply, its diagnostics unjudged, after the checks every route runs:
  /// throws `InputTypeError` for a scalar passed where the main function takes an array (or the
  /// other way round).
  Expansion expansion(NodeContext const& node) const;
  OpDescription const& description() const { return op_; }
  SourceManager const& sources() const { return *sm_; }
  BuildFlags const& flags() const { return flags_; }
  Language language() const override { return op_.language; }
  bool may_release_gil() const override { return op_.release_gil; }
  /// Where its files read an array's elements through a plain floating type (SL306, as
  /// errors) when the inputs marked `dual_inputs` and outputs marked `dual_outputs` hold dual
  /// numbers: arrays the files show to be others (a plain input, through `INPUT_k` or the
  /// main function's parameter) pass, as do lines with `// section-lint: ignore[SL306]`.
  std::vector<Diagnostic> values_hidden_from(std::vector<bool> const& dual_inputs,
                                             std::vector<bool> const& dual_outputs) const;
  /// `values_hidden_from`'s casts, each with the input whose data it reads.
  std::vector<HiddenValue> hidden_values(std::vector<bool> const& dual_inputs,
                                         std::vector<bool> const& dual_outputs) const;

 private:
  OpDescription op_;
  std::shared_ptr<SourceManager const> sm_;
  SectionSet sections_;
  ExpandOptions options_;
  BuildFlags flags_;
};

/// Why the derivatives of an op cannot be derived from its C code: the message (the op, then
/// each cast at its line) and the casts' diagnostics.
struct DerivativeRefusal {
  std::string message;
  std::vector<Diagnostic> diagnostics;
};

/// What an op's files refuse of its derivatives, as data: `all`, the refusal of the derivative
/// of every input marked (each cast), when anything is hidden; `every`, whether a cast concerns
/// every input (of an output's data, or of an array the files do not name), which refuses the
/// derivative whole; else `inputs`, by input, the casts of each input's data, which refuse that
/// input's derivative only.
struct DerivativeRefusals {
  std::optional<DerivativeRefusal> all;
  bool every = false;
  std::map<std::size_t, DerivativeRefusal> inputs;
};

/// The refusals of the derivatives of `sections` for the inputs marked `dual_inputs` and the
/// outputs marked `dual_outputs` (`SectionOp::hidden_values`).
DerivativeRefusals derivative_refusals(SectionOp const& sections,
                                       std::vector<bool> const& dual_inputs,
                                       std::vector<bool> const& dual_outputs);

/// The op computing `code`'s derivatives (`make_derivative_op`), `code` being `sections` or an
/// op that asks it for its code (a drop-in's). Throws `LinkError` with the SL306 diagnostics
/// of `sections.values_hidden_from` when the files read an array that carries derivatives
/// through a plain floating type, which would give wrong derivatives where no compiler sees it.
COpPtr derivative_op(SectionOp const& sections, COpPtr code, DerivativeSpec spec);

/// The single-apply graph `build()` makes: one input per `inputs` type, one output per
/// `outputs` type, and the params as a constant when the op has them.
Graph single_op_graph(COpPtr op, std::vector<CTypePtr> const& inputs,
                      std::vector<CTypePtr> const& outputs,
                      std::shared_ptr<ParamsType const> params = nullptr);

/// The single-apply graph of the op of `sections` (in `files`) for its signature (`op.inputs`
/// and `op.outputs` set), `params` its params fields and `flags` what it adds to the build:
/// what `build()` links and `check_op_compiles` checks, with its params type (null without
/// params). Throws `std::invalid_argument` without a signature, `signature_error` for bad
/// params or names.
struct SectionGraph {
  Graph graph;
  std::shared_ptr<ParamsType const> params;
};
SectionGraph section_op_graph(OpDescription op, std::vector<NamedType> params,
                              std::shared_ptr<SourceManager const> files, SectionSet sections,
                              BuildFlags flags = {});

/// `name(input types) -> output types`, as a `CompiledOp` is shown.
std::string signature_text(std::string const& name, std::vector<CTypePtr> const& inputs,
                           std::vector<CTypePtr> const& outputs);

/// A derivative's spec from its parts, `mode` named (`"pullback"`, `"pullback:forward"`,
/// `"pullback:reverse"`, `"pushforward"`); throws `std::invalid_argument` for another name.
DerivativeSpec derivative_spec(std::string const& mode, std::vector<CTypePtr> outputs,
                               std::vector<bool> differentiated, std::vector<bool> cotangents,
                               int width);

/// The module of `graph`, as it is built: its text (`write_module`) and the compile flags the
/// build decides from it (`decide_compile_flags`), which are part of its key. Throws
/// `LinkError` (from an op) or `std::invalid_argument` (bad graph).
ModuleSource generate_module(Graph const& graph);

/// The compiler's diagnostics on the section files of `sections` (read into `files`) for one
/// application of `op` with its signature (`op.inputs` and `op.outputs` must be set; `params`
/// its params fields): the module `build()` compiles for them, generated and compile-checked
/// (`check_module`), nothing built. The diagnostics are in `sm`'s files, found there by path
/// (a file not there is read from disk). Throws `LinkError` (a module that cannot be
/// generated, no compiler), `signature_error` (bad params), `BuildInterrupted`.
std::vector<Diagnostic> check_op_compiles(OpDescription op, std::vector<NamedType> params,
                                          std::shared_ptr<SourceManager const> files,
                                          SectionSet sections, PythonEnvironment const& python,
                                          ModuleCache const& cache, SourceManager& sm);

}  // namespace section
