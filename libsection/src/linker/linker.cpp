// Section-file ops, the cache key, and building a module into the cache.
#include "section/linker.hpp"

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/hash.hpp"
#include "base/text.hpp"
#include "linker/compile.hpp"
#include "linker/files.hpp"
#include "linker/private_dir_detail.hpp"
#include "parse/c_tokens.hpp"
#include "parse/declarations.hpp"
#include "section/expand.hpp"
#include "section/log.hpp"
#include "section/manifest.hpp"
#include "section/names.hpp"
#include "section/platform.hpp"
#include "section/version.hpp"

namespace section {
namespace fs = std::filesystem;

// ---- ops from section files ----------------------------------------------------------------

SectionOp::SectionOp(OpDescription op, std::shared_ptr<SourceManager const> sm, SectionSet sections,
                     ExpandOptions options, BuildFlags flags)
    : op_(std::move(op)), sm_(std::move(sm)), sections_(std::move(sections)),
      options_(std::move(options)), flags_(std::move(flags)) {
  if (!sm_) throw std::invalid_argument("SectionOp needs the SourceManager of its files");
  check_display_name(op_.name, "op name");
  if (op_.func_name) check_func_name(*op_.func_name);
  check_padding(op_.num_inputs, "num_inputs");
  check_padding(op_.num_outputs, "num_outputs");
}

namespace {

/// One parameter of a C function as written: its text, whether it is a pointer or array, and
/// whether its type is plainly a number (a typedef may hide a pointer, so only these count).
struct WrittenParameter {
  std::string text;
  bool pointer = false;
  bool number = false;
  bool type_seen = false;
};

bool is_number_type_word(std::string_view word) {
  static constexpr std::string_view words[] = {
      "bool",    "char",     "short",    "int",       "long",     "float",     "double",
      "signed",  "unsigned", "size_t",   "ptrdiff_t", "int8_t",   "int16_t",   "int32_t",
      "int64_t", "uint8_t",  "uint16_t", "uint32_t",  "uint64_t", "Py_ssize_t"};
  for (auto w : words)
    if (word == w) return true;
  return word.starts_with("npy_") || word.starts_with("DTYPE_");
}

/// The parameters between the parentheses of `decl`, split at the top-level commas.
std::vector<WrittenParameter> written_parameters(std::string_view text,
                                                 c_scan::Declaration const& decl) {
  std::vector<WrittenParameter> out(1);
  auto const inside = c_scan::tokenize(text, decl.parameters_begin + 1, decl.parameters_end - 1);
  int depth = 0;
  for (auto const& token : inside.tokens) {
    std::string_view const spelling = text.substr(token.begin, token.end - token.begin);
    if (spelling == "(" || spelling == "[" || spelling == "{" || spelling == "<") ++depth;
    if (spelling == ")" || spelling == "]" || spelling == "}" || spelling == ">") --depth;
    if (depth == 0 && spelling == ",") {
      out.push_back({});
      continue;
    }
    out.back().pointer = out.back().pointer || spelling == "*" || spelling == "[";
    bool const qualifier = spelling == "const" || spelling == "volatile";
    if (!qualifier && !out.back().type_seen) {  // the first word of its type decides
      out.back().type_seen = true;
      out.back().number = is_number_type_word(spelling);
    }
    if (!out.back().text.empty()) out.back().text += ' ';
    out.back().text.append(spelling);
  }
  return out;
}

bool is_support_section(std::string const& tag) {
  return tag == "support_code" || tag == "support_code_apply" || tag == "support_code_struct";
}

/// The parameters of the function `func_name` as a support section declares or defines it;
/// nothing when none does (a header may declare it: the compiler then has the last word).
std::optional<std::vector<WrittenParameter>> main_function_parameters(
    SourceManager const& sm, SectionSet const& sections, std::string const& func_name) {
  using namespace c_scan;
  std::string wanted;
  for (char c : func_name)
    if (c != ' ' && c != '\t') wanted += c;
  for (auto const& section : sections.sections) {
    if (!is_support_section(section.tag)) continue;
    for (auto const& block : section.blocks) {
      std::string_view const text = sm.file(block.body.file).text();
      auto const body = tokenize(text, block.body.begin, block.body.end);
      for (auto const& decl : file_scope_declarations(text, body.tokens)) {
        bool const is_function = decl.kind == Declaration::Kind::function_definition ||
                                 decl.kind == Declaration::Kind::function_declaration;
        if (!is_function || decl.name != wanted || !decl.parameter_count) continue;
        if (*decl.parameter_count == 0) return std::vector<WrittenParameter>{};
        return written_parameters(text, decl);
      }
    }
  }
  return std::nullopt;
}

// A value passed as a scalar where the function takes an array (or the other way round) would
// only show up as a compile error in generated code: say which input, and what it needs.
void check_main_function_inputs(OpDescription const& spec, SourceManager const& sm,
                                SectionSet const& sections, NodeContext const& ctx) {
  if (!spec.func_name) return;
  auto const parameters = main_function_parameters(sm, sections, *spec.func_name);
  if (!parameters) return;
  for (std::size_t i = 0; i < ctx.input_types.size() && i < parameters->size(); ++i) {
    CType const& type = *ctx.input_types[i];
    if (!type.dtype()) continue;  // only the built-in tensors and scalars are known here
    bool const passes_pointer = type.c_declare("v", {}, true).find('*') != std::string::npos;
    auto const& parameter = (*parameters)[i];
    // A scalar where it takes a pointer; an array where it takes a plain number.
    bool const mismatch =
        passes_pointer ? !parameter.pointer && parameter.number : parameter.pointer;
    if (!mismatch) continue;
    std::string const wanted = parameter.pointer ? "an array" : "a scalar";
    throw InputTypeError(spec.name + " input " + std::to_string(i) + ": expected " + wanted +
                         " (`" + *spec.func_name + "` takes `" + parameter.text + "`), got " +
                         (passes_pointer ? "an array of type " : "a scalar of type ") +
                         type.describe() +
                         (parameter.pointer ? "; pass a NumPy array" : "; pass a number"));
  }
}

}  // namespace

Expansion SectionOp::expansion(NodeContext const& node) const {
  check_main_function_inputs(op_, *sm_, sections_, node);
  return expand(*sm_, sections_, op_, node, options_);
}

OpCode SectionOp::generate(NodeContext const& node) const {
  Expansion e = expansion(node);
  if (has_errors(e.diagnostics) || !e.code) {
    std::string message = op_.name + ": cannot expand its sections";
    for (auto const& d : e.diagnostics)
      if (d.is_error()) message += "\n  " + d.message;
    if (!e.code && e.diagnostics.empty())
      message += "\n  no `code` section and no function name: give func_name or a `code` section";
    throw LinkError(message, e.diagnostics);
  }
  OpCode code;
  code.support_code = {std::move(e.support_code)};
  code.code = std::move(*e.code);
  static_cast<ApplyCode&>(code) = std::move(static_cast<ApplyCode&>(e));  // the strings both share
  static_cast<BuildFlags&>(code) = flags_;
  return code;
}

Graph single_op_graph(COpPtr op, std::vector<CTypePtr> const& inputs,
                      std::vector<CTypePtr> const& outputs,
                      std::shared_ptr<ParamsType const> params) {
  if (outputs.empty()) throw std::invalid_argument("an op needs at least one output type");
  Graph g;
  std::vector<std::size_t> ins;
  for (std::size_t i = 0; i < inputs.size(); ++i) ins.push_back(g.add_input(inputs[i]));
  std::optional<std::size_t> params_var;
  if (params) params_var = g.add_constant(std::move(params), "params");
  for (auto v : g.add_apply(std::move(op), ins, outputs, params_var)) g.add_output(v);
  return g;
}

// ---- cache key and build -------------------------------------------------------------------

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

[[noreturn]] void report_failure(ModuleSource const& module, std::string const& key,
                                 ModuleCache& cache, PrivateDir const& work,
                                 std::vector<std::string> const& command, SourceManager& sm,
                                 bool show_generated) {
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
  } catch (LinkError const& e) {
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
  std::string const errors = explain_compile_errors(diagnostics, sm, sources, show_generated);
  if (!errors.empty()) {
    message += errors;
  } else {
    // No parsable error (a crash, a missing program): show the end of the log itself.
    std::string tail = log.size() > 2000 ? log.substr(log.size() - 2000) : log;
    message += "\n" + tail;
  }
  message += where;
  throw CompileError(message, std::move(diagnostics), kept);
}

}  // namespace

BuiltModule build_module(ModuleSource const& module, PythonEnvironment const& python,
                         ModuleCache& cache, SourceManager& sm) {
  Toolchain const tc = find_toolchain(cache.state(), module.language);
  std::string const key = module_cache_key(module, tc, python);
  BuiltModule result;
  result.debug = tc.debug;
  result.entry = cache.get_or_build(
      key,
      [&](PrivateDir const& work) {
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
                                     (cache.root() / "entries" / key).string());
        auto const start = std::chrono::steady_clock::now();
        if (run_program(commands.compile, log) != 0)
          report_failure(module, key, cache, work, commands.compile, sm, tc.show_generated);
        if (run_program(commands.link, log) != 0)
          report_failure(module, key, cache, work, commands.link, sm, tc.show_generated);
        work.remove(entry_file::object);
        if (module.graphs > 1) check_graph_symbols(work);
        double const seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        // One record per compile, after it, so it can carry the time (a cache hit says nothing).
        char took[32];
        std::snprintf(took, sizeof took, "%.3f", seconds);
        std::string const what =
            module.graphs > 1 ? std::to_string(module.graphs) + " graphs together (" +
                                    join_names(module.op_names) + ")"
                              : join_names(module.op_names) + "(" + join_names(module.input_types) +
                                    ") -> " + join_names(module.output_types);
        log_record(LogLevel::info,
                   "compiled " + what + " in " + took + " s (" + key.substr(0, 12) + ")", seconds);
        ModuleManifest manifest;
        manifest.module = module.name;
        manifest.ops = module.op_names;
        manifest.inputs = module.input_types;
        manifest.outputs = module.output_types;
        manifest.libsection_version = version;
        manifest.compiler = tc.identity;
        manifest.compile_command = shell_quote(commands.compile);
        manifest.link_command = shell_quote(commands.link);
        manifest.python_abi = python.abi;
        manifest.numpy = python.numpy_api;
        manifest.build_seconds = seconds;
        manifest.graphs = module.graphs;
        return manifest;
      },
      &result.compiled);
  return result;
}

namespace {

/// Gives member `graph` of the library `batch` its own entry under `key`: the library's file
/// (a hard link, or a copy where links are refused) and a manifest naming its graph.
void add_member_entry(ModuleSource const& member, std::string const& key, int graph,
                      BuiltModule const& batch, ModuleCache& cache) {
  cache.get_or_build(
      key,
      [&](PrivateDir const& work) {
        int const fd = batch.entry.library_file.get();
        if (!platform::link_descriptor(fd, work.fd(), entry_file::library)) {
          auto const bytes = ::lseek(fd, 0, SEEK_SET) == 0
                                 ? detail::read_fd(fd, batch.entry.manifest->size)
                                 : std::nullopt;
          if (!bytes) throw LinkError("cannot read " + batch.entry.library.string());
          work.write(entry_file::library, *bytes);
        }
        ModuleManifest manifest = *batch.entry.manifest;
        manifest.module = member.name;
        manifest.ops = member.op_names;
        manifest.inputs = member.input_types;
        manifest.outputs = member.output_types;
        manifest.graph = graph;
        manifest.library_key = batch.entry.key;
        return manifest;
      },
      nullptr, false);
}

}  // namespace

void build_modules(std::vector<ModuleSource const*> const& members, PythonEnvironment const& python,
                   ModuleCache& cache, SourceManager& sm) {
  // The members to compile, in groups that can share a library, each in the order of its keys
  // (so the same members make the same library whatever order they come in).
  std::vector<std::vector<std::pair<std::string, ModuleSource const*>>> groups;
  for (auto const* m : members) {
    std::string const key =
        module_cache_key(*m, find_toolchain(cache.state(), m->language), python);
    if (cache.find(key)) continue;
    auto group = std::find_if(groups.begin(), groups.end(), [&](auto const& g) {
      return can_share_library(*g.front().second, *m);
    });
    if (group == groups.end()) group = groups.emplace(groups.end());
    if (std::none_of(group->begin(), group->end(), [&](auto const& e) { return e.first == key; }))
      group->emplace_back(key, m);
  }
  std::optional<CompileError> first_error;
  auto alone = [&](ModuleSource const& m) {
    try {
      build_module(m, python, cache, sm);
    } catch (CompileError const& e) {
      if (!first_error) first_error = e;
    }
  };
  for (auto& group : groups) {
    std::sort(group.begin(), group.end());
    if (group.size() == 1) {
      alone(*group.front().second);
      continue;
    }
    std::vector<ModuleSource const*> sources;
    for (auto const& e : group) sources.push_back(e.second);
    ModuleSource const batch = generate_batch(sources);
    std::optional<BuiltModule> built;
    try {
      built = build_module(batch, python, cache, sm);
    } catch (LinkError const& e) {
      // Whatever the members' own errors are, each reports them from its own module.
      cache.failed().remove(
          module_cache_key(batch, find_toolchain(cache.state(), batch.language), python));
      std::string const why =
          dynamic_cast<CompileError const*>(&e) ? "" : std::string(": ") + e.what();
      log_record(LogLevel::info, "the " + std::to_string(group.size()) +
                                     " graphs did not compile together" + why +
                                     "; compiling them one by one");
    }
    for (std::size_t k = 0; k < group.size(); ++k) {
      if (built)
        add_member_entry(*group[k].second, group[k].first, static_cast<int>(k), *built, cache);
      else alone(*group[k].second);
    }
    if (built) cache.gc(cache.max_bytes());
  }
  if (first_error) throw *first_error;
}

}  // namespace section
