// The linker core end to end: section files → op → module source → cached shared object.
// Loading the object and calling it needs a Python interpreter; that part is in libsection._core.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "section/cache.hpp"
#include "section/ctype.hpp"
#include "section/module.hpp"
#include "section/op.hpp"
#include "section/parse.hpp"

namespace section {

/// The Python a module is built for; every field is part of the cache key.
struct PythonEnvironment {
  std::vector<std::string> include_dirs;  ///< Python's and NumPy's include directories
  std::string abi;                        ///< `sysconfig.get_config_var("SOABI")`
  std::string numpy_api;                  ///< NumPy version and C-API version
};

/// A compile that failed. The generated source, the command and the full log are kept in
/// `kept_dir()`; `diagnostics()` point into the user's files through the `#line` directives.
class CompileError : public LinkError {
 public:
  CompileError(std::string const& message, std::vector<Diagnostic> diagnostics,
               std::filesystem::path kept_dir)
      : LinkError(message, std::move(diagnostics)), kept_dir_(std::move(kept_dir)) {}
  std::filesystem::path const& kept_dir() const { return kept_dir_; }

 private:
  std::filesystem::path kept_dir_;
};

/// Thrown when a build is interrupted (see `set_interrupt_check`): the compiler was killed and
/// nothing was published. Not a `std::exception`, so no handler that recovers from a failed
/// step (the precompiled header's, say) takes it for one.
struct BuildInterrupted {};

/// Asked while a build waits for the compiler (every 20 ms at most): true stops the build (the
/// Python module checks for a pending signal, SIGINT from a terminal or a notebook's interrupt). A
/// plain function, safe to call from any building thread.
using InterruptCheck = bool (*)();
void set_interrupt_check(InterruptCheck check);

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
  BuildFlags const& flags() const { return flags_; }
  Language language() const override { return op_.language; }

 private:
  OpDescription op_;
  std::shared_ptr<SourceManager const> sm_;
  SectionSet sections_;
  ExpandOptions options_;
  BuildFlags flags_;
};

/// The single-apply graph `build()` makes: one input per `inputs` type, one output per
/// `outputs` type, and the params as a constant when the op has them.
Graph single_op_graph(COpPtr op, std::vector<CTypePtr> const& inputs,
                      std::vector<CTypePtr> const& outputs,
                      std::shared_ptr<ParamsType const> params = nullptr);

/// A module found in or added to the cache.
struct BuiltModule {
  CacheEntry entry;
  bool compiled = false;  ///< false: found in the cache
  bool debug = false;     ///< built for gdb (`LIBSECTION_DEBUG=1`)
};

/// Finds `module` in `cache` or compiles it there (under its key's lock, logging a line to
/// stderr while compiling). Throws `CompileError` with diagnostics in `sm`'s files.
BuiltModule build_module(ModuleSource const& module, PythonEnvironment const& python,
                         ModuleCache& cache, SourceManager& sm);

/// Finds the modules of `members` (modules of one graph each) in `cache`, and compiles those
/// it does not find together where they can share a library (`generate_batch`): one compile
/// and one link for all, about half the compiler time of one module each. Each member still
/// gets its own entry, under its own key (the library, hard linked, and a manifest naming its
/// graph), so a later `build_module` of any one of them finds it. When they do not compile
/// together (two ops' support code defines one name differently, say), each is compiled
/// alone. Throws the first member's `CompileError` once every member is done.
void build_modules(std::vector<ModuleSource const*> const& members, PythonEnvironment const& python,
                   ModuleCache& cache, SourceManager& sm);

}  // namespace section
