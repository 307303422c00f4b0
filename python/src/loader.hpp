// Loading built modules into this process: the Python they are built for, dlopen with the
// module ABI check, and the in-process memo of modules already verified and loaded.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "section/linker.hpp"

namespace section::python {

using NewFn = void* (*)(PyObject**);
using RunFn = int (*)(void*);
using FreeFn = void (*)(void*);
/// A module's batch entry: its graph once per row of a batch, in one C loop (see batch.c).
using RunBatchFn = int (*)(void*, PyObject* const* inputs, PyObject** outputs,
                           long long const* plan, char const* const* labels);

/// A shared object loaded and initialised once per process; never unloaded, since instances
/// and the Python objects they created may outlive any handle we could count.
struct LoadedLibrary {
  void* handle = nullptr;
  NewFn instance_new = nullptr;
  RunFn run = nullptr;
  FreeFn instance_free = nullptr;
  RunBatchFn run_batch = nullptr;  ///< NULL: an input or output cannot take a batch's rows
};

/// The Python this process runs (include directories, ABI, NumPy), computed once.
PythonEnvironment const& python_environment();

/// A module loaded into this process, and what was built (`CompiledOp.info`: cache key,
/// library, module name, ops, types, whether this call compiled it).
struct LoadedModule {
  LoadedLibrary const* library;
  pybind11::dict info;
};

/// Finds `module` among those this process loaded, else builds it (or finds it in the cache,
/// the GIL released meanwhile) and loads it. Raises the Python form of a `LinkError`, its
/// diagnostics resolved against `sm`.
LoadedModule load_module(ModuleSource const& module, SourceManager& sm);

/// The module of cache entry `key`, for a caller that has nothing but the key (a JAX
/// computation exported from another process): found and verified in the cache as any module,
/// and loaded only when its manifest says it runs the one op `name`, with `n_inputs` inputs and
/// `n_outputs` outputs, built for this Python and this libsection; nothing when the cache has no
/// such entry. Raises `LinkError` for an invalid key or an entry that says otherwise.
std::optional<LoadedModule> load_cached_module(std::string const& key, std::string const& name,
                                               std::size_t n_inputs, std::size_t n_outputs);

/// The tapes of reverse-mode derived gradients in this process (the runtime keeps them): the
/// bytes of the last taped pass's tape and of the largest since the last reset.
struct TapeBytes {
  std::size_t last = 0, peak = 0;
};
/// Reads them; `reset` starts the largest from zero again (after reading it).
TapeBytes tape_bytes(bool reset);
/// The recordings (a value's taped pass, kept for its pullback) pullbacks of this process swept
/// in place of a taped pass of their own; `reset` starts the count again after reading it.
std::size_t recordings_swept(bool reset);
/// The recordings the runtime keeps now, and their bytes (at most 16 and 512 MiB).
struct RecordingsHeld {
  std::size_t count = 0, bytes = 0;
};
RecordingsHeld recordings_held();

/// A support library loaded into this process: the addresses of the symbols asked for, and
/// what was built (as `LoadedModule::info`).
struct LoadedSupport {
  std::map<std::string, std::uintptr_t> symbols;
  pybind11::dict info;
};

/// Builds (or finds) and loads the support library `module` (`support_library_module`): its
/// ABI checked and `libsection_module_init` run, as a module's, then the addresses of
/// `symbols`, each of which it must export. Raises as `load_module` does.
LoadedSupport load_support_library(ModuleSource const& module, SourceManager& sm,
                                   std::vector<std::string> const& symbols);

/// `load_support_library` of the support library `code` makes (`support_library_module`, in
/// `language`, "c++" or "c"), as `_core.load_support_library` returns it:
/// `({symbol: address}, info)`.
pybind11::tuple load_support_code(std::string const& name, std::string const& code,
                                  std::vector<std::string> header_dirs,
                                  std::vector<std::string> const& symbols,
                                  std::string const& language);

/// Builds (or finds) `modules` in the cache, together where they can share a library
/// (`build_modules`), the GIL released meanwhile; loads nothing. Raises as `load_module` does.
void build_together(std::vector<ModuleSource const*> const& modules, SourceManager& sm);

/// The builds threads run for one caller (build_many's workers), stopped together when it is
/// interrupted, since a signal reaches only the main thread. A thread's builds belong to the
/// groups it has entered; once one of them is cancelled, each such build stops (its compiler
/// killed, KeyboardInterrupt raised in its thread), whether under way or started later.
/// Builds of other threads, and of other groups, go on.
struct BuildGroup {
  std::atomic<bool> cancelled{false};
};

/// Makes the calling thread's builds belong to `group` too, until `leave_build_group`.
void enter_build_group(std::shared_ptr<BuildGroup> group);

/// Undoes the calling thread's last `enter_build_group`.
void leave_build_group();

/// Whether a group the calling thread's build belongs to has been cancelled.
bool build_cancelled();

}  // namespace section::python
