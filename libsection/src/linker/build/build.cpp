// The build: a module's key, computed once per build, and its compile into the cache; several
// modules compiled together into one library where they can share it.
#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/hash.hpp"
#include "base/text.hpp"
#include "base/utf8.hpp"
#include "linker/build/compile.hpp"
#include "linker/cache/files.hpp"
#include "linker/cache/private_dir_detail.hpp"
#include "section/log.hpp"
#include "section/platform.hpp"
#include "section/version.hpp"

namespace section {
namespace fs = std::filesystem;

std::string module_cache_key(ModuleSource const& module, Toolchain const& tc,
                             PythonEnvironment const& python, CacheFormat const& format) {
  // Length-prefixed fields, so no two different field lists hash the same text.
  std::string material;
  auto add = [&](std::string const& field) {
    material += std::to_string(field.size()) + ":" + field + ";";
  };
  add("libsection-module");
  add(std::to_string(format.module_abi));
  add("manifest " + std::to_string(format.manifest));
  add(version);
  add(tc.identity);
  for (auto const& f : tc.flags) add(f);
  add("link");
  for (auto const& f : tc.link_flags) add(f);
  add(python.abi);
  add(python.numpy_api);
  for (auto const& d : python.include_dirs) add(d);
  bool native = false;
  for (auto const& a : module.compile_args) {
    add(a);
    native = native || a.find("=native") != std::string::npos;
  }
  // An op's `-march=native` (the drop-in's default) keys the module by the CPU as
  // LIBSECTION_CXXFLAGS's does: machines sharing a cache never load each other's.
  if (native && tc.identity.find(" cpu:") == std::string::npos)
    add("cpu:" + detail::sha256_hex(platform::cpu_description()));
  for (auto const& l : module.libraries) add(l);
  add("dirs");  // so a header directory can never pass for a library and back
  for (auto const& d : module.header_dirs) add(d);
  add("lib-dirs");
  for (auto const& d : module.lib_dirs) add(d);
  add(module.text);
  // Only a C module adds it (its compiler and flags differ too): C++ keys stay as they were.
  if (module.language == Language::c) add("language c");
  if (module.whole_program) add("whole program");
  return detail::sha256_hex(material);
}

namespace {

/// A module of several graphs puts each graph's C++ code in a namespace of its own. A function
/// its code declares but does not define (one of a library's, say) then names another symbol
/// than in the graph's own module, which the dynamic loader would fail to find only when the
/// module is loaded: such a module is refused here, and its graphs are compiled one by one.
void check_graph_symbols(PrivateDir const& work) {
  auto const image = work.read(entry_file::library);
  auto const undefined = image ? platform::undefined_symbols(*image) : std::nullopt;
  if (!undefined) throw LinkError("cannot read the symbols of the module of several graphs");
  for (auto const& name : *undefined) {
    if (name.find(graph_namespace_prefix) == std::string::npos) continue;
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> readable(
        abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    throw LinkError("the module of several graphs leaves " +
                    (status == 0 && readable ? std::string(readable.get()) : name) + " undefined");
  }
}

/// `stopped`: why the compiler was stopped (its limits), else empty.
[[noreturn]] void report_failure(ModuleSource const& module, std::string const& key,
                                 ModuleCache& cache, PrivateDir const& work,
                                 std::vector<std::string> const& command, SourceManager& sm,
                                 bool show_generated, std::string const& stopped) {
  // Keep what a user needs to reproduce the failure, outside the (discarded) work directory.
  // Keeping it is a courtesy: when it fails (a full disk, an unwritable failed/), the compile
  // error is still what is reported.
  fs::path kept = cache.failed().path() / key;
  std::string log = work.read(entry_file::log).value_or("");
  std::string where;
  try {
    cache.failed().remove(key);
    PrivateDir const dir = cache.failed().sub(key);
    std::string kept_log = log;
    replace_all(kept_log, work.path().string(), kept.string());
    replace_all(kept_log, module_file_name, (kept / entry_file::source).string());
    dir.write(entry_file::source, module.text);
    dir.write(entry_file::log, kept_log);
    dir.write(entry_file::command, shell_quote(command) + "\n");
    log = std::move(kept_log);
    where = "\nthe generated source, the command and the full log are in " + kept.string();
  } catch (CacheError const& e) {
    where = "\n(the generated source and the log could not be kept: ";
    where += e.what();
    where += ")";
    kept.clear();
  }

  // Errors in the module's own lines are read against its text, under the path the log gives
  // it, so what they say about the op can be told in its section files.
  std::string const module_path =
      ((kept.empty() ? work.path() : kept) / entry_file::source).string();
  if (kept.empty()) replace_all(log, module_file_name, module_path);
  CompiledSources const sources = compiled_sources(module.text, module_path, sm);
  auto diagnostics = parse_compiler_output(log, sm);
  std::string message = "compiling " + join_names(module.op_names) + " failed";
  if (!stopped.empty()) message += ": " + stopped;
  std::string const errors = explain_compile_errors(diagnostics, sm, sources, show_generated);
  if (!errors.empty()) {
    message += errors;
  } else if (stopped.empty()) {
    // No parsable error (a crash, a missing program): show the end of the log itself.
    std::string tail = log.size() > 2000 ? log.substr(log.size() - 2000) : log;
    message += "\n" + tail;
  }
  message += where;
  throw CompileError(message, std::move(diagnostics), kept);
}

}  // namespace

namespace {

/// A module on its way into the cache, with its toolchain and its key, computed once: the key
/// finds the entry, names the failed build's folder, and tells the members of a library compiled
/// together apart.
struct KeyedModule {
  ModuleSource const* module;
  Toolchain toolchain;
  std::string key;
};

KeyedModule with_key(ModuleSource const& module, PythonEnvironment const& python,
                     ModuleCache const& cache) {
  Toolchain tc = find_toolchain(cache.state(), module.language);
  std::string key = module_cache_key(module, tc, python);
  return {&module, std::move(tc), std::move(key)};
}

/// The manifest's record of what `module` is: its name, its ops and its types.
void record_module(ModuleManifest& manifest, ModuleSource const& module) {
  manifest.module = module.name;
  manifest.ops = module.op_names;
  manifest.inputs = module.input_types;
  manifest.outputs = module.output_types;
}

/// What the manifest of a freshly compiled module records.
ModuleManifest compiled_manifest(KeyedModule const& keyed, PythonEnvironment const& python,
                                 CompileCommands const& commands, double seconds) {
  ModuleSource const& module = *keyed.module;
  ModuleManifest manifest;
  record_module(manifest, module);
  manifest.libsection_version = version;
  manifest.compiler = keyed.toolchain.identity;
  manifest.compile_command = shell_quote(commands.compile);
  manifest.link_command = shell_quote(commands.link);
  manifest.python_abi = python.abi;
  manifest.numpy = python.numpy_api;
  manifest.build_seconds = seconds;
  manifest.graphs = module.graphs;
  return manifest;
}

/// One record per compile, after it, so it can carry the time (a cache hit says nothing).
void log_compiled(KeyedModule const& keyed, double seconds) {
  ModuleSource const& module = *keyed.module;
  char took[32];
  std::snprintf(took, sizeof took, "%.3f", seconds);
  std::string const what =
      module.graphs > 1
          ? std::to_string(module.graphs) + " graphs together (" + join_names(module.op_names) + ")"
          : join_names(module.op_names) + "(" + join_names(module.input_types) + ") -> " +
                join_names(module.output_types);
  log_record(LogLevel::info,
             "compiled " + what + " in " + took + " s (" + keyed.key.substr(0, 12) + ")", seconds);
}

/// Whether `path` is in the folder `dir` or below it (both absolute and normal).
bool inside(fs::path const& path, fs::path const& dir) {
  auto const [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end() || (d->empty() && std::next(d) == dir.end());
}

/// The headers of the user's folders the module in `work` was compiled from, with the SHA-256
/// of their bytes: the compiler's dependency list less the module's source, what is in the
/// cache (the precompiled header) and Python's and NumPy's headers, which the key covers. A
/// header changed after the module's source was written (by the clock file times come from)
/// may not be what was compiled: it gets no hash, and the entry counts as out of date next time.
std::vector<SourceFileHash> user_headers(PrivateDir const& work, PythonEnvironment const& python,
                                         ModuleCache const& cache) {
  auto started = std::chrono::system_clock::time_point::min();
  file_sha256(work.path() / entry_file::source, &started);
  std::vector<fs::path> skipped = {fs::absolute(cache.root()).lexically_normal()};
  for (auto const& dir : python.include_dirs)
    skipped.push_back(fs::absolute(dir).lexically_normal());
  std::vector<SourceFileHash> headers;
  auto const listed = work.read(entry_file::dependencies).value_or("");
  for (auto const& named : dependency_file_paths(listed)) {
    fs::path const path = fs::absolute(named).lexically_normal();  // the compiler's working folder
    if (std::any_of(skipped.begin(), skipped.end(), [&](auto const& d) { return inside(path, d); }))
      continue;
    auto changed = std::chrono::system_clock::time_point::max();
    auto hash = file_sha256(path, &changed);
    bool const kept = hash && !find_invalid_utf8(path.string()) && changed <= started;
    headers.push_back({path.string(), kept ? *hash : std::string()});
  }
  return headers;
}

/// Compiles and links the module in `work`, the cache's folder for its entry.
ModuleManifest compile_into(PrivateDir const& work, KeyedModule const& keyed,
                            PythonEnvironment const& python, ModuleCache& cache,
                            SourceManager& sm) {
  ModuleSource const& module = *keyed.module;
  Toolchain const& tc = keyed.toolchain;
  fs::path const source = work.path() / entry_file::source;
  fs::path const object = work.path() / entry_file::object;
  fs::path const library = work.path() / entry_file::library;
  fs::path const log = work.path() / entry_file::log;
  work.write(entry_file::source, module.text);
  auto const pch = precompiled_header(tc, python, cache, header_flags(module.compile_args));
  auto commands = compile_commands(tc, python, module, source, object, library,
                                   pch ? std::optional<fs::path>(pch->header) : std::nullopt);
  // Debug info names the source where the entry keeps it, not the work folder renamed away.
  if (tc.debug)
    commands.compile.push_back("-fdebug-prefix-map=" + work.path().string() + "=" +
                               (cache.root() / "entries" / keyed.key).string());
  // The headers it reads, so that the entry knows them (ccache's direct mode).
  commands.compile.insert(
      commands.compile.end(),
      {"-MMD", "-MT", "module", "-MF", (work.path() / entry_file::dependencies).string()});
  auto run = [&](std::vector<std::string> const& command) {
    std::string stopped;
    try {
      if (run_program(command, log, tc.limits) == 0) return;
    } catch (ProgramStopped const& e) {
      stopped = e.what();
    }
    report_failure(module, keyed.key, cache, work, command, sm, tc.show_generated, stopped);
  };
  auto const start = std::chrono::steady_clock::now();
  run(commands.compile);
  run(commands.link);
  work.remove(entry_file::object);
  auto headers = user_headers(work, python, cache);
  work.remove(entry_file::dependencies);
  if (module.graphs > 1) check_graph_symbols(work);
  double const seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log_compiled(keyed, seconds);
  ModuleManifest manifest = compiled_manifest(keyed, python, commands, seconds);
  manifest.headers = std::move(headers);
  return manifest;
}

BuiltModule build_keyed(KeyedModule const& keyed, PythonEnvironment const& python,
                        ModuleCache& cache, SourceManager& sm) {
  BuiltModule result;
  result.debug = keyed.toolchain.debug;
  result.entry = cache.get_or_build(
      keyed.key,
      [&](PrivateDir const& work) { return compile_into(work, keyed, python, cache, sm); },
      &result.compiled);
  return result;
}

}  // namespace

BuiltModule build_module(ModuleSource const& module, PythonEnvironment const& python,
                         ModuleCache& cache, SourceManager& sm) {
  return build_keyed(with_key(module, python, cache), python, cache, sm);
}

namespace {

/// Gives member `graph` of the library `together` its own entry under `key`: the library's file
/// (a hard link, or a copy where links are refused) and a manifest naming its graph.
void add_member_entry(ModuleSource const& member, std::string const& key, int graph,
                      BuiltModule const& together, ModuleCache& cache) {
  cache.get_or_build(
      key,
      [&](PrivateDir const& work) {
        int const fd = together.entry.library_file.get();
        if (!platform::link_descriptor(fd, work.fd(), entry_file::library)) {
          auto const bytes = ::lseek(fd, 0, SEEK_SET) == 0
                                 ? detail::read_fd(fd, together.entry.manifest->size)
                                 : std::nullopt;
          if (!bytes) throw LinkError("cannot read " + together.entry.library.string());
          work.write(entry_file::library, *bytes);
        }
        ModuleManifest manifest = *together.entry.manifest;
        record_module(manifest, member);
        manifest.graph = graph;
        manifest.library_key = together.entry.key;
        return manifest;
      },
      nullptr, false);
}

}  // namespace

void build_modules(std::vector<ModuleSource const*> const& members, PythonEnvironment const& python,
                   ModuleCache& cache, SourceManager& sm) {
  // The members to compile, in groups that can share a library, each in the order of its keys
  // (so the same members make the same library whatever order they come in).
  std::vector<std::vector<KeyedModule>> groups;
  for (auto const* m : members) {
    KeyedModule keyed = with_key(*m, python, cache);
    if (cache.find(keyed.key)) continue;
    auto group = std::find_if(groups.begin(), groups.end(), [&](auto const& g) {
      return can_share_library(*g.front().module, *m);
    });
    if (group == groups.end()) group = groups.emplace(groups.end());
    if (std::none_of(group->begin(), group->end(),
                     [&](KeyedModule const& e) { return e.key == keyed.key; }))
      group->push_back(std::move(keyed));
  }
  std::optional<CompileError> first_error;
  auto alone = [&](KeyedModule const& keyed) {
    try {
      build_keyed(keyed, python, cache, sm);
    } catch (CompileError const& e) {
      if (!first_error) first_error = e;
    }
  };
  for (auto& group : groups) {
    std::sort(group.begin(), group.end(),
              [](KeyedModule const& a, KeyedModule const& b) { return a.key < b.key; });
    if (group.size() == 1) {
      alone(group.front());
      continue;
    }
    std::vector<ModuleSource const*> sources;
    for (auto const& e : group) sources.push_back(e.module);
    ModuleSource const together = generate_together(sources);
    KeyedModule const keyed_together = with_key(together, python, cache);
    std::optional<BuiltModule> built;
    // Whatever the members' own errors are, each reports them from its own module.
    auto apart = [&](std::string const& why) {
      cache.failed().remove(keyed_together.key);
      log_record(LogLevel::info, "the " + std::to_string(group.size()) +
                                     " graphs did not compile together" + why +
                                     "; compiling them one by one");
    };
    try {
      built = build_keyed(keyed_together, python, cache, sm);
    } catch (LinkError const& e) {
      apart(dynamic_cast<CompileError const*>(&e) ? "" : std::string(": ") + e.what());
    } catch (CacheError const& e) {
      apart(std::string(": ") + e.what());
    }
    for (std::size_t k = 0; k < group.size(); ++k) {
      if (built)
        add_member_entry(*group[k].module, group[k].key, static_cast<int>(k), *built, cache);
      else alone(group[k]);
    }
    if (built) cache.gc(cache.max_bytes());
  }
  if (first_error) throw *first_error;
}

}  // namespace section
