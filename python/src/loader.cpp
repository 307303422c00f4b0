// Loading built modules: each module's library is verified (by the cache), opened through the
// verified descriptor, checked for the module ABI and initialised once per process.
#include "loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <pybind11/gil_safe_call_once.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "link_errors.hpp"
#include "section/bounded_cache.hpp"
#include "section/linker/cache/cache.hpp"
#include "section/platform.hpp"
#include "section/version.hpp"

namespace py = pybind11;

namespace section::python {

// ---- the Python this process runs -------------------------------------------------------

/// Computed once. Not a function-local static: its initialisation imports modules, which can
/// release the GIL, and a second thread waiting on the static's guard while holding the GIL
/// would deadlock the two.
PythonEnvironment const& python_environment() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<PythonEnvironment> storage;
  return storage
      .call_once_and_store_result([] {
        py::module_ sysconfig = py::module_::import("sysconfig");
        py::module_ numpy = py::module_::import("numpy");
        py::module_ multiarray = py::module_::import("numpy._core._multiarray_umath");
        PythonEnvironment e;
        e.include_dirs = {py::str(sysconfig.attr("get_config_var")("INCLUDEPY")),
                          py::str(numpy.attr("get_include")())};
        e.abi = py::str(sysconfig.attr("get_config_var")("SOABI"));
        e.numpy_api = std::string(py::str(numpy.attr("__version__"))) + " C-API " +
                      std::string(py::str(multiarray.attr("_get_ndarray_c_version")()));
        return e;
      })
      .get_stored();
}

namespace {

void const* runtime_table();
void* runtime_handle();

using InitFn = PyObject* (*)(void const*);
using GraphInitFn = PyObject* (*)();

/// The address of `name` in the library `handle` (of `path`); throws `LinkError` without it.
void* library_symbol(void* handle, std::filesystem::path const& path, std::string const& name) {
  void* s = ::dlsym(handle, name.c_str());
  if (!s) throw LinkError(path.string() + " is not a libsection module: no " + name);
  return s;
}

/// Opens the library of cache entry `key` from `verified_fd`, the descriptor its SHA-256 was
/// checked through (`platform::descriptor_path`, `/proc/self/fd/N` on Linux, reopens that same
/// file, whatever `path` names by now), so nothing can be swapped in between; checks its module
/// ABI and initialises it once per process (`libsection_module_init`, given the runtime's
/// table). The descriptor stays open: glibc knows the library by that name, and a reused number
/// would make a later dlopen return this library again. A debug build is loaded by its path:
/// gdb reads modules by the loader's name for them, and `/proc/self/fd/N` would name one of
/// gdb's own descriptors. The graphs of one library have entries of their own whose files are
/// links to one file, which the dynamic loader loads once: its initialisation runs once.
void* open_library(std::filesystem::path const& path, int verified_fd, bool by_path,
                   void const* runtime) {
  static std::set<void*> initialised;  // guarded by the GIL
  if (verified_fd < 0) throw LinkError("cannot load " + path.string() + ": it was not verified");
  int const fd = ::fcntl(verified_fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw LinkError("cannot load " + path.string() + ": " + std::strerror(errno));
  std::string const by_fd = by_path ? path.string() : section::platform::descriptor_path(fd);
  void* handle = ::dlopen(by_fd.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string const why = ::dlerror();
    ::close(fd);
    throw LinkError("cannot load " + path.string() + " (through " + by_fd + "): " + why);
  }
  auto abi = reinterpret_cast<int (*)()>(library_symbol(handle, path, "libsection_abi_version"));
  if (abi() != module_abi_version)
    throw LinkError(path.string() + " was built for module ABI " + std::to_string(abi()) +
                    ", this libsection loads ABI " + std::to_string(module_abi_version));
  auto init = reinterpret_cast<InitFn>(library_symbol(handle, path, "libsection_module_init"));
  if (!initialised.count(handle)) {
    if (!init(runtime)) throw py::error_already_set();
    initialised.insert(handle);
  }
  return handle;
}

/// The library of a module's graph (`suffix`: which one, `graph_suffix`), loaded once per `key`
/// (the cache key and the library's SHA-256 after it: an entry rebuilt for a changed header is
/// another library under the same cache key; `open_library`), its graph initialised and its
/// entry points found.
LoadedLibrary const& load_library(std::string const& key, std::filesystem::path const& path,
                                  int verified_fd, bool by_path, void const* runtime,
                                  std::string const& suffix) {
  static std::map<std::string, LoadedLibrary> loaded;  // by key and hash; guarded by the GIL
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  LoadedLibrary lib;
  lib.handle = open_library(path, verified_fd, by_path, runtime);
  auto symbol = [&](std::string const& name) { return library_symbol(lib.handle, path, name); };
  auto graph_init = reinterpret_cast<GraphInitFn>(symbol("libsection_init" + suffix));
  lib.instance_new = reinterpret_cast<NewFn>(symbol("libsection_instance_new" + suffix));
  lib.run = reinterpret_cast<RunFn>(symbol("libsection_instance_run" + suffix));
  lib.instance_free = reinterpret_cast<FreeFn>(symbol("libsection_instance_free" + suffix));
  // Optional: a module whose inputs or outputs cannot take a batch's rows has none.
  lib.run_batch = reinterpret_cast<RunBatchFn>(
      ::dlsym(lib.handle, ("libsection_instance_run_batch" + suffix).c_str()));
  if (!graph_init()) throw py::error_already_set();
  return loaded.emplace(key, lib).first->second;
}

// The in-process memo: a module already verified and loaded is not hashed again, only the
// headers of the user's folders it was built from, which may have changed since. Bounded: a
// module it lets go of is found in the cache again (hashed and verified) and stays loaded.
// Never destroyed: it holds Python objects, which must not be released after finalisation.
struct KnownModule {
  std::filesystem::path library;
  py::dict info;
  std::string loaded_as;  ///< `load_library`'s name for it
  std::vector<SourceFileHash> headers;
};
using LoadedModules = BoundedCache<std::string, KnownModule>;
constexpr std::size_t loaded_modules_kept = 1024;
LoadedModules& loaded_modules() {
  static auto* memo = new LoadedModules(loaded_modules_kept);
  return *memo;
}

/// What tells modules apart in the memo: their text and everything else of theirs the cache
/// key covers, and the cache they are in. One text built with other flags, folders or
/// libraries is another module; so is one asked for after `LIBSECTION_CACHE_DIR` changed,
/// which must be built (or found) in the new cache. Empty when the cache's settings are bad:
/// not memoised, so the build reports them.
std::string memo_key(ModuleSource const& module) {
  std::string key;
  auto add = [&](std::string const& field) {
    key += std::to_string(field.size()) + ":" + field + ";";
  };
  try {
    add(ModuleCache::default_root().string());
  } catch (CacheError const&) {
    return {};
  }
  add(module.text);
  for (auto const* list :
       {&module.compile_args, &module.header_dirs, &module.libraries, &module.lib_dirs}) {
    add(std::to_string(list->size()));
    for (auto const& item : *list) add(item);
  }
  add(module.language == Language::c ? "c" : "c++");
  add(module.whole_program ? "whole program" : "");
  return key;
}

/// What was built, for `CompiledOp.info`.
py::dict build_info(ModuleSource const& module, BuiltModule const& built) {
  py::dict info;
  info["key"] = built.entry.key;
  info["library"] = built.entry.library.string();
  info["module"] = module.name;
  info["ops"] = module.op_names;
  info["inputs"] = module.input_types;
  info["outputs"] = module.output_types;
  info["compiled"] = built.compiled;
  // Which graph of its library the module is (a library may hold several: `generate_together`).
  info["graph"] = built.entry.manifest->graph;
  info["graphs"] = built.entry.manifest->graphs;
  return info;
}

}  // namespace

namespace {

thread_local std::vector<std::shared_ptr<BuildGroup>> thread_groups;  // innermost last

}  // namespace

void enter_build_group(std::shared_ptr<BuildGroup> group) {
  thread_groups.push_back(std::move(group));
}

void leave_build_group() {
  if (!thread_groups.empty()) thread_groups.pop_back();
}

bool build_cancelled() {
  return std::any_of(thread_groups.begin(), thread_groups.end(),
                     [](auto const& g) { return g->cancelled.load(); });
}

namespace {

/// The runtime's table (`libsection_runtime`), which every module's initialisation receives:
/// `_runtime.so`, built and installed with the package beside this library, is loaded the first
/// time a module is. It is trusted as the package is: Python imported `_core` from that folder.
void const* runtime_table() {
  static void const* table = nullptr;  // guarded by the GIL
  if (table) return table;
  void* const handle = runtime_handle();
  auto get = reinterpret_cast<void const* (*)()>(::dlsym(handle, "libsection_runtime_table"));
  void const* const got = get();
  if (!got) throw py::error_already_set();  // NumPy's C API could not be imported
  table = got;  // the library stays loaded for the process: modules call into it
  return table;
}

/// The runtime `_runtime.so`, loaded once (see `runtime_table`), its ABI checked.
void* runtime_handle() {
  static void* loaded = nullptr;  // guarded by the GIL
  if (loaded) return loaded;
  Dl_info self{};
  if (!::dladdr(reinterpret_cast<void const*>(&runtime_table), &self) || !self.dli_fname)
    throw LinkError("cannot find where libsection's _core is installed, to load its runtime");
  std::string const path =
      (std::filesystem::path(self.dli_fname).parent_path() / "_runtime.so").string();
  auto fail = [&](std::string const& why) {
    return LinkError("cannot load libsection's runtime " + path + ": " + why +
                     " (reinstall libsection: the runtime is built with the package)");
  };
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw fail(::dlerror());
  auto abi = reinterpret_cast<int (*)()>(::dlsym(handle, "libsection_abi_version"));
  if (!abi || !::dlsym(handle, "libsection_runtime_table") ||
      !::dlsym(handle, "libsection_tape_bytes") ||
      !::dlsym(handle, "libsection_recordings_swept") ||
      !::dlsym(handle, "libsection_recordings_held"))
    throw fail("it is not a libsection runtime");
  if (abi() != module_abi_version)
    throw fail("it has module ABI " + std::to_string(abi()) + ", this libsection " +
               std::to_string(module_abi_version) + " (an install mixing two versions)");
  loaded = handle;
  return loaded;
}

}  // namespace

TapeBytes tape_bytes(bool reset) {
  using ReadFn = void (*)(int, std::size_t*, std::size_t*);
  auto read = reinterpret_cast<ReadFn>(::dlsym(runtime_handle(), "libsection_tape_bytes"));
  TapeBytes got;
  read(reset ? 1 : 0, &got.last, &got.peak);
  return got;
}

std::size_t recordings_swept(bool reset) {
  using ReadFn = std::size_t (*)(int);
  auto read = reinterpret_cast<ReadFn>(::dlsym(runtime_handle(), "libsection_recordings_swept"));
  return read(reset ? 1 : 0);
}

RecordingsHeld recordings_held() {
  using ReadFn = void (*)(std::size_t*, std::size_t*);
  auto read = reinterpret_cast<ReadFn>(::dlsym(runtime_handle(), "libsection_recordings_held"));
  RecordingsHeld held;
  read(&held.count, &held.bytes);
  return held;
}

namespace {

/// Runs `build` on the cache with the GIL released; its `LinkError` (or the cache's
/// `CacheError`) becomes the Python error, an interrupt a KeyboardInterrupt, and an exception a
/// callback left pending is raised.
template <class Build>
void build_without_gil(SourceManager& sm, Build const& build) {
  try {
    py::gil_scoped_release release;
    ModuleCache cache;
    build(cache);
  } catch (LinkError const& e) {
    raise_python(e, sm);
  } catch (CacheError const& e) {  // the cache's own: a LinkError in Python, as all of these
    raise_python(LinkError(e.what()), sm);
  } catch (BuildInterrupted const&) {  // the KeyboardInterrupt is pending on this thread
    if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
  if (PyErr_Occurred()) throw py::error_already_set();  // raised by a callback after the build
}

}  // namespace

void build_together(std::vector<ModuleSource const*> const& modules, SourceManager& sm) {
  PythonEnvironment const& python = python_environment();
  build_without_gil(sm, [&](ModuleCache& cache) { build_modules(modules, python, cache, sm); });
}

LoadedModule load_module(ModuleSource const& module, SourceManager& sm) {
  PythonEnvironment const& python = python_environment();
  void const* runtime = runtime_table();
  std::filesystem::path library;
  std::string key;
  FileHandle verified_library;  // the module's bytes as verified; loaded through this
  bool debug = false;           // a build for gdb, loaded by path
  py::dict info;
  std::string loaded_as;  // the key and the library's hash
  std::vector<SourceFileHash> headers;
  auto& memo = loaded_modules();
  std::string const memo_as = memo_key(module);
  auto const* known = memo_as.empty() ? nullptr : memo.find(memo_as);
  if (known && changed_header(known->headers).empty()) {
    library = known->library;
    info = py::dict(known->info);
    info["compiled"] = false;
    key = info["key"].cast<std::string>();
    loaded_as = known->loaded_as;
    headers = known->headers;
  } else {
    BuiltModule built;
    build_without_gil(sm,
                      [&](ModuleCache& cache) { built = build_module(module, python, cache, sm); });
    library = built.entry.library;
    key = built.entry.key;
    verified_library = built.entry.library_file;
    info = build_info(module, built);
    debug = built.debug;
    loaded_as = key + "/" + built.entry.manifest->sha256;
    headers = built.entry.manifest->headers;
  }
  std::string const suffix = graph_suffix(info["graph"].cast<int>(), info["graphs"].cast<int>());
  LoadedLibrary const& lib =
      load_library(loaded_as, library, verified_library.get(), debug, runtime, suffix);
  if (!memo_as.empty())
    memo.put(memo_as, KnownModule{library, py::dict(info), loaded_as, std::move(headers)});
  return {&lib, std::move(info)};
}

std::optional<LoadedModule> load_cached_module(std::string const& key, std::string const& name,
                                               std::size_t n_inputs, std::size_t n_outputs) {
  PythonEnvironment const& python = python_environment();
  void const* runtime = runtime_table();
  SourceManager sm;
  std::optional<CacheEntry> entry;
  build_without_gil(sm, [&](ModuleCache& cache) { entry = cache.find(key); });
  if (!entry) return std::nullopt;
  ModuleManifest const& m = *entry->manifest;
  auto refuse = [&](std::string const& why) {
    raise_python(LinkError("cache entry " + key + " cannot run " + name + ": " + why), sm);
  };
  if (m.ops.size() != 1 || m.ops[0] != name) {
    std::string ops;
    for (auto const& op : m.ops) ops += (ops.empty() ? "" : ", ") + op;
    refuse("it is the module of " + (ops.empty() ? std::string("no op") : ops));
  }
  if (m.inputs.size() != n_inputs || m.outputs.size() != n_outputs)
    refuse("its op has " + std::to_string(m.inputs.size()) + " inputs and " +
           std::to_string(m.outputs.size()) + " outputs, the call " + std::to_string(n_inputs) +
           " and " + std::to_string(n_outputs));
  if (m.python_abi != python.abi || m.numpy != python.numpy_api || m.libsection_version != version)
    refuse("it was built for " + m.python_abi + ", NumPy " + m.numpy + " and libsection " +
           m.libsection_version + ", this process runs " + python.abi + ", NumPy " +
           python.numpy_api + " and libsection " + version);
  py::dict info;
  info["key"] = entry->key;
  info["library"] = entry->library.string();
  info["module"] = m.module;
  info["ops"] = m.ops;
  info["inputs"] = m.inputs;
  info["outputs"] = m.outputs;
  info["compiled"] = false;
  info["graph"] = m.graph;
  info["graphs"] = m.graphs;
  LoadedLibrary const* lib = nullptr;
  try {
    lib = &load_library(key + "/" + m.sha256, entry->library, entry->library_file.get(), false,
                        runtime, graph_suffix(m.graph, m.graphs));
  } catch (LinkError const& e) {
    raise_python(e, sm);
  }
  return LoadedModule{lib, std::move(info)};
}

LoadedSupport load_support_library(ModuleSource const& module, SourceManager& sm,
                                   std::vector<std::string> const& symbols) {
  PythonEnvironment const& python = python_environment();
  void const* runtime = runtime_table();
  BuiltModule built;
  build_without_gil(sm,
                    [&](ModuleCache& cache) { built = build_module(module, python, cache, sm); });
  LoadedSupport out;
  try {
    void* handle =
        open_library(built.entry.library, built.entry.library_file.get(), built.debug, runtime);
    for (auto const& name : symbols)
      if (void* address = ::dlsym(handle, name.c_str()))
        out.symbols[name] = reinterpret_cast<std::uintptr_t>(address);
      else throw LinkError(module.name + " has no symbol " + name);
  } catch (LinkError const& e) {
    raise_python(e, sm);
  }
  out.info = build_info(module, built);
  return out;
}

py::tuple load_support_code(std::string const& name, std::string const& code,
                            std::vector<std::string> header_dirs,
                            std::vector<std::string> const& symbols, std::string const& language) {
  SourceManager sm;
  auto loaded = load_support_library(
      support_library_module(name, code, parse_language(language, name), std::move(header_dirs)),
      sm, symbols);
  return py::make_tuple(loaded.symbols, loaded.info);
}

}  // namespace section::python
