// Loading built modules into this process: the Python they are built for, dlopen with the
// module ABI check, and the in-process memo of modules already verified and loaded.
#pragma once

#include <pybind11/pybind11.h>

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

/// Builds (or finds) `modules` in the cache, together where they can share a library
/// (`build_modules`), the GIL released meanwhile; loads nothing. Raises as `load_module` does.
void build_together(std::vector<ModuleSource const*> const& modules, SourceManager& sm);

/// Stops every build under way in this process, in any thread: its compiler is killed and it
/// raises KeyboardInterrupt. For a caller interrupted while threads build for it (build_many),
/// since a signal reaches only the main thread.
void cancel_builds();

/// Whether the calling thread's build has been cancelled since it started.
bool build_cancelled();

}  // namespace section::python
