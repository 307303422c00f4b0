// The build stage: a generated module compiled into the cache, found there when it already is;
// several modules compiled together into one library where they can share it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "section/linker/cache/cache.hpp"
#include "section/linker/generate/module.hpp"
#include "section/source.hpp"

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
/// it does not find together where they can share a library (`generate_together`): one compile
/// and one link for all, about half the compiler time of one module each. Each member still
/// gets its own entry, under its own key (the library, hard linked, and a manifest naming its
/// graph), so a later `build_module` of any one of them finds it. When they do not compile
/// together (two ops' support code defines one name differently, say), each is compiled
/// alone. Throws the first member's `CompileError` once every member is done.
void build_modules(std::vector<ModuleSource const*> const& members, PythonEnvironment const& python,
                   ModuleCache& cache, SourceManager& sm);

/// The compiler's diagnostics on `module` without building it: the build's compiler and flags
/// with `-fsyntax-only`, in a work folder of `cache` removed after (nothing is cached). Errors
/// and warnings in the section files its `#line` directives name stay there; an error in the
/// generated module is told where it means something in them (the op's main function not
/// declared, ...), else summed up in one diagnostic. Only `python.include_dirs` is read. Throws
/// `LinkError` when no compiler can be run, `BuildInterrupted` when stopped.
std::vector<Diagnostic> check_module(ModuleSource const& module, PythonEnvironment const& python,
                                     ModuleCache const& cache, SourceManager& sm);

/// Python's and NumPy's include folders as the interpreter `interpreter` (a path, or a name on
/// `PATH`) gives them (`sysconfig`'s `include`, `numpy.get_include()`). Throws `LinkError`
/// saying what is missing.
PythonEnvironment python_headers(std::string const& interpreter, ModuleCache const& cache);

}  // namespace section
