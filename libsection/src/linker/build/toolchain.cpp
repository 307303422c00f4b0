// Finding the compiler and how it is run, and the commands that compile and link a module.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/hash.hpp"
#include "linker/build/compile.hpp"
#include "linker/cache/files.hpp"
#include "section/platform.hpp"

namespace section {
namespace fs = std::filesystem;

std::optional<fs::path> find_on_path(std::string const& program) {
  if (program.find('/') != std::string::npos)
    return ::access(program.c_str(), X_OK) == 0 ? std::optional<fs::path>(program) : std::nullopt;
  char const* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    // A relative entry (`.`, or an empty one) would find the program in the working folder,
    // a repository's say (the language server runs in the one opened): skipped, as Go skips it.
    if (dir.empty() || dir.front() != '/') continue;
    fs::path const candidate = fs::path(dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

namespace {

// One spawn per compiler binary ever: the answer is remembered next to the cache.
std::string compiler_identity(fs::path const& compiler, PrivateDir const& state,
                              ProgramLimits const& limits) {
  struct stat st {};
  if (::stat(compiler.c_str(), &st) != 0)
    throw LinkError("cannot stat the compiler " + compiler.string() + ": " + std::strerror(errno));
  std::string const stamp = compiler.string() + "\n" + std::to_string(st.st_size) + "\n" +
                            std::to_string(st.st_mtim.tv_sec) + "." +
                            std::to_string(st.st_mtim.tv_nsec);
  std::string const remembered = "compiler-" + detail::sha256_hex(stamp).substr(0, 24);
  if (auto text = state.read(remembered); text && !text->empty()) return *text;

  std::string const log = unique_name("version");
  int const status = run_program({compiler.string(), "--version"}, state.path() / log, limits);
  std::string first_line = state.read(log).value_or("");
  state.remove(log);
  first_line = first_line.substr(0, first_line.find('\n'));
  if (status != 0 || first_line.empty())
    throw LinkError("the compiler " + compiler.string() + " does not answer `--version`");
  std::string identity = compiler.string() + ": " + first_line;
  state.write(remembered, identity);
  return identity;
}

bool is_launcher(std::string const& program) {
  std::string const name = fs::path(program).filename().string();
  return name == "ccache" || name == "sccache" || name == "distcc" || name == "icecc";
}

}  // namespace

bool is_clang(std::string const& identity) { return identity.find("clang") != std::string::npos; }

namespace {

/// `program` resolved on PATH; `named_by` (an environment variable) says where it was named.
std::string resolve_program(std::string const& program, std::string const& named_by) {
  auto resolved = find_on_path(program);
  if (!resolved)
    throw LinkError(named_by + " names `" + program + "`, which is not an executable on PATH");
  return resolved->string();
}

/// The compiler command (resolved path, then its arguments) from `CXX` (`CC` for C), else the
/// first of `c++`, `g++`, `clang++` (`cc`, `gcc`, `clang`) on PATH. A leading launcher there
/// goes to `launcher` when none is set: the launcher does not decide what is built, the
/// compiler after it does.
std::vector<std::string> find_compiler(std::vector<std::string>& launcher, Language language) {
  bool const c = language == Language::c;
  char const* const variable = c ? "CC" : "CXX";
  std::vector<std::string> command = split_blanks(std::getenv(variable));
  if (command.size() > 1 && launcher.empty() && is_launcher(command[0])) {
    launcher = {resolve_program(command[0], variable)};
    command.erase(command.begin());
  }
  if (!command.empty()) {
    command[0] = resolve_program(command[0], variable);
    return command;
  }
  auto const candidates = c ? std::vector<char const*>{"cc", "gcc", "clang"}
                            : std::vector<char const*>{"c++", "g++", "clang++"};
  for (char const* candidate : candidates)
    if (auto resolved = find_on_path(candidate)) return {resolved->string()};
  if (c)
    throw LinkError("no C compiler found for an op declared C: set CC, or install gcc or clang "
                    "(searched PATH for cc, gcc and clang)");
  throw LinkError("no C++ compiler found: set CXX, or install g++ or clang++ "
                  "(searched PATH for c++, g++ and clang++)");
}

/// The flags of every module, and `LIBSECTION_CXXFLAGS`. No -march=native by default: modules
/// stay valid on every machine sharing a cache, and no CPU probe is needed. With it,
/// `native` is set.
/// `LIBSECTION_DEBUG=1`: modules for gdb (`-O0 -g`). The flags enter the key, so debug modules
/// sit apart in the cache.
/// C modules: GNU C11 (what PyTensor-style C code needs: declarations after statements, `for`
/// declarations, GNU extensions) and `LIBSECTION_CFLAGS`.
std::vector<std::string> module_flags(Settings const& settings, Language language, bool& native) {
  bool const debug = settings.debug;
  bool const c = language == Language::c;
  std::vector<std::string> flags = {c ? "-std=gnu11" : "-std=c++17", debug ? "-O0" : "-O3"};
  if (debug) flags.emplace_back("-g");
  // -pipe: the assembler reads the compiler's output from a pipe, not a temporary file
  // (about 10 ms of a small module's 0.1 s).
  flags.insert(flags.end(),
               {"-pipe", "-fPIC", "-fvisibility=hidden", "-fno-math-errno", "-Wno-unused-label",
                "-Wno-unused-variable", "-Wno-unused-but-set-variable"});
  if (!c) flags.emplace_back("-Wno-write-strings");  // C++ only: C's literals are `char[]`
  native = false;
  for (auto const& f : c ? settings.cflags : settings.cxxflags) {
    native = native || f.find("=native") != std::string::npos;
    flags.push_back(f);
  }
  return flags;
}

/// GNU ld takes about half of a cold build's link step; gold and lld take far less. Uses
/// `LIBSECTION_LINKER`, else lld for clang or gold when installed.
std::vector<std::string> linker_flags(Settings const& settings, std::string const& identity) {
  std::string linker = settings.linker;
  if (linker.empty()) {
    if (is_clang(identity) && find_on_path("ld.lld")) linker = "lld";
    else if (find_on_path("ld.gold")) linker = "gold";
  }
  if (linker.empty() || linker == "default") return {};
  return {"-fuse-ld=" + linker};
}

}  // namespace

Toolchain find_toolchain(PrivateDir const& state, Language language) {
  Settings const settings = read_settings_as<LinkError>();
  Toolchain tc;
  tc.language = language;
  tc.launcher = settings.compiler_launcher;
  if (!tc.launcher.empty())
    tc.launcher[0] = resolve_program(tc.launcher[0], "LIBSECTION_COMPILER_LAUNCHER");
  tc.compiler = find_compiler(tc.launcher, language);
  tc.limits = compiler_limits(settings);
  tc.check_limits = compiler_limits(settings, true);
  tc.identity = compiler_identity(tc.compiler[0], state, tc.limits);
  for (std::size_t i = 1; i < tc.compiler.size(); ++i) tc.identity += " " + tc.compiler[i];
  bool native = false;
  tc.debug = settings.debug;
  tc.precompiled_header = settings.precompiled_header;
  tc.show_generated = settings.show_generated;
  tc.flags = module_flags(settings, language, native);
  // `-march=native` code only runs on CPUs like this one: key it by the CPU too, so machines
  // sharing a cache never load each other's.
  if (native)
    tc.identity += " cpu:" + detail::sha256_hex(platform::cpu_description()).substr(0, 16);
  tc.link_flags = linker_flags(settings, tc.identity);
  return tc;
}

std::vector<std::string> base_compile(Toolchain const& tc, PythonEnvironment const& python,
                                      std::vector<std::string> const& extra_args) {
  std::vector<std::string> cmd = tc.compiler;
  cmd.insert(cmd.end(), tc.flags.begin(), tc.flags.end());
  cmd.insert(cmd.end(), extra_args.begin(), extra_args.end());
  for (auto const& dir : python.include_dirs) cmd.push_back("-I" + dir);
  return cmd;
}

std::vector<std::string> module_compile(Toolchain const& tc, PythonEnvironment const& python,
                                        ModuleSource const& module) {
  auto cmd = base_compile(tc, python, module.compile_args);
  for (auto const& dir : module.header_dirs) cmd.push_back("-I" + dir);
  return cmd;
}

CompileCommands compile_commands(Toolchain const& tc, PythonEnvironment const& python,
                                 ModuleSource const& module, fs::path const& source,
                                 fs::path const& object, fs::path const& library,
                                 std::optional<fs::path> const& pch) {
  if (tc.language != module.language)
    throw LinkError("module " + module.name + " is " + std::string(language_name(module.language)) +
                    ", but its compiler is for " + std::string(language_name(tc.language)));
  CompileCommands cmd;
  cmd.compile = tc.launcher;
  auto const base = module_compile(tc, python, module);
  cmd.compile.insert(cmd.compile.end(), base.begin(), base.end());
  if (module.whole_program && !is_clang(tc.identity)) cmd.compile.push_back(whole_program_flag);
  if (pch) cmd.compile.insert(cmd.compile.end(), {"-include", pch->string()});
  cmd.compile.insert(cmd.compile.end(), {"-c", "-x", tc.language == Language::c ? "c" : "c++",
                                         source.string(), "-o", object.string()});

  // Linking is a separate step so ccache/sccache/distcc can cache and distribute the compile.
  cmd.link = tc.compiler;
  cmd.link.insert(cmd.link.end(), tc.link_flags.begin(), tc.link_flags.end());
  cmd.link.insert(cmd.link.end(), {"-shared", "-o", library.string(), object.string()});
  for (auto const& dir : module.lib_dirs) {  // found when linking, and again when loading
    cmd.link.push_back("-L" + dir);
    cmd.link.push_back("-Wl,-rpath," + dir);
  }
  for (auto const& lib : module.libraries) cmd.link.push_back("-l" + lib);
  return cmd;
}

}  // namespace section
