// The linker core end to end, its face: section files → op → module source (linker/generate/)
// → compile flags, key and compile (linker/build/) → cached shared object (linker/cache/).
// Loading the object and calling it needs a Python interpreter; that part is in libsection._core.
#pragma once

#include <filesystem>
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

 private:
  OpDescription op_;
  std::shared_ptr<SourceManager const> sm_;
  SectionSet sections_;
  ExpandOptions options_;
  BuildFlags flags_;
};

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
