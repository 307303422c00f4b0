// Finding and running the compiler; compiler output → diagnostics.
#include "linker/compile.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "base/hash.hpp"
#include "linker/cache/files.hpp"
#include "parse/read.hpp"
#include "section/codes.hpp"
#include "section/log.hpp"
#include "section/linker/cache/manifest.hpp"
#include "section/platform.hpp"

extern char** environ;

namespace section {
namespace fs = std::filesystem;

namespace {

std::optional<fs::path> find_on_path(std::string const& program) {
  if (program.find('/') != std::string::npos)
    return ::access(program.c_str(), X_OK) == 0 ? std::optional<fs::path>(program) : std::nullopt;
  char const* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path const candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// One spawn per compiler binary ever: the answer is remembered next to the cache.
std::string compiler_identity(fs::path const& compiler, PrivateDir const& state) {
  struct stat st {};
  if (::stat(compiler.c_str(), &st) != 0)
    throw LinkError("cannot stat the compiler " + compiler.string() + ": " + std::strerror(errno));
  std::string const stamp = compiler.string() + "\n" + std::to_string(st.st_size) + "\n" +
                            std::to_string(st.st_mtim.tv_sec) + "." +
                            std::to_string(st.st_mtim.tv_nsec);
  std::string const remembered = "compiler-" + detail::sha256_hex(stamp).substr(0, 24);
  if (auto text = state.read(remembered); text && !text->empty()) return *text;

  std::string const log = unique_name("version");
  int const status = run_program({compiler.string(), "--version"}, state.path() / log);
  std::string first_line = state.read(log).value_or("");
  state.remove(log);
  first_line = first_line.substr(0, first_line.find('\n'));
  if (status != 0 || first_line.empty())
    throw LinkError("the compiler " + compiler.string() + " does not answer `--version`");
  std::string identity = compiler.string() + ": " + first_line;
  state.write(remembered, identity);
  return identity;
}

/// Clang has no precompiled headers of GCC's kind, no -fwhole-program, and links with lld.
bool is_clang(std::string const& identity) { return identity.find("clang") != std::string::npos; }

bool is_launcher(std::string const& program) {
  std::string const name = fs::path(program).filename().string();
  return name == "ccache" || name == "sccache" || name == "distcc" || name == "icecc";
}

}  // namespace

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

namespace {

/// Every `LIBSECTION_*` setting (`read_settings`), a bad one as a `LinkError` naming it.
Settings build_settings() {
  try {
    return read_settings();
  } catch (SettingsError const& e) {
    throw LinkError(e.what());
  }
}

}  // namespace

Toolchain find_toolchain(PrivateDir const& state, Language language) {
  Settings const settings = build_settings();
  Toolchain tc;
  tc.language = language;
  tc.launcher = settings.compiler_launcher;
  if (!tc.launcher.empty())
    tc.launcher[0] = resolve_program(tc.launcher[0], "LIBSECTION_COMPILER_LAUNCHER");
  tc.compiler = find_compiler(tc.launcher, language);
  tc.identity = compiler_identity(tc.compiler[0], state);
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

namespace {

std::vector<std::string> base_compile(Toolchain const& tc, PythonEnvironment const& python,
                                      std::vector<std::string> const& extra_args) {
  std::vector<std::string> cmd = tc.compiler;
  cmd.insert(cmd.end(), tc.flags.begin(), tc.flags.end());
  cmd.insert(cmd.end(), extra_args.begin(), extra_args.end());
  for (auto const& dir : python.include_dirs) cmd.push_back("-I" + dir);
  return cmd;
}

double timed_run(std::vector<std::string> const& argv, fs::path const& log, int& status) {
  auto const start = std::chrono::steady_clock::now();
  status = run_program(argv, log);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A failure that says nothing about the compiler or the headers (a full disk, an I/O error, a
// kill): not remembered, so the next build tries again.
bool passing_failure(int status, std::string const& log) {
  if (status >= 128) return true;  // killed by a signal
  for (char const* sign : {"No space left on device", "Disk quota exceeded", "Input/output error",
                           "Read-only file system", "Cannot allocate memory", "out of memory",
                           "Too many open files", "Killed", "Interrupt"})
    if (log.find(sign) != std::string::npos) return true;
  return false;
}

constexpr char const* pch_header_name = "libsection_prelude.h";

/// What the setup of `key` decided: use the header (its .gch is there), skip it, or nothing yet.
std::optional<bool> pch_decided(PrivateDir const& headers, std::string const& key) {
  auto const dir = headers.existing(key);
  if (!dir) return std::nullopt;
  auto const verdict = dir->read("verdict");
  struct stat st {};
  if (verdict == "use" &&
      ::fstatat(dir->fd(), (std::string(pch_header_name) + ".gch").c_str(), &st,
                AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(st.st_mode)) {
    ::futimens(dir->fd(), nullptr);  // recently used, for gc
    return true;
  }
  if (verdict == "skip") return false;
  return std::nullopt;
}

/// Compiles the header in `work` and writes its verdict there. False (logged, nothing to
/// publish) for a failure that says nothing about the compiler or the headers.
bool build_pch(Toolchain const& tc, PythonEnvironment const& python, WorkDir const& work,
               std::vector<std::string> const& header_args) {
  std::string const header_name = pch_header_name;
  fs::path const work_header = work.dir.path() / header_name;
  work.dir.write(header_name, module_prelude);
  fs::path const log = work.dir.path() / entry_file::log;
  auto build = base_compile(tc, python, header_args);
  char const* const kind = tc.language == Language::c ? "c-header" : "c++-header";
  build.insert(build.end(),
               {"-x", kind, work_header.string(), "-o", work_header.string() + ".gch"});
  int status = 0;
  timed_run(build, log, status);
  // No timing probes: they cost two more compiles on the first build, and a header GCC
  // cannot use is only slower (GCC then reads the header text beside it), never wrong.
  struct stat built {};
  bool const use =
      status == 0 &&
      ::fstatat(work.dir.fd(), (header_name + ".gch").c_str(), &built, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(built.st_mode);
  std::string const output = work.dir.read(entry_file::log).value_or("");
  if (status != 0 && passing_failure(status, output)) {
    std::string why = status >= 128 ? "killed by signal " + std::to_string(status - 128) : output;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    why = why.substr(why.rfind('\n') + 1);
    log_record(LogLevel::warning, "one-time setup failed (" + why +
                                      "); compiling without a precompiled "
                                      "header this time, the next build tries again");
    return false;
  }
  work.dir.write("verdict", use ? "use" : "skip");
  return true;
}

}  // namespace

std::string precompiled_header_key(Toolchain const& tc, PythonEnvironment const& python,
                                   CacheFormat const& format,
                                   std::vector<std::string> const& header_args) {
  std::string material = "module abi " + std::to_string(format.module_abi) + "\nmanifest " +
                         std::to_string(format.manifest) + "\n" + tc.identity + "\n" +
                         module_prelude;
  for (auto const& f : tc.flags) material += "\n" + f;
  for (auto const& d : python.include_dirs) material += "\n" + d;
  material += "\n" + python.abi + "\n" + python.numpy_api;
  // Only a C header adds it: the keys of the C++ headers stay as they were.
  if (tc.language == Language::c) material += "\nlanguage c";
  for (auto const& f : header_args) material += "\nmodule " + f;
  return detail::sha256_hex(material).substr(0, 24);
}

std::vector<std::string> header_flags(std::vector<std::string> const& compile_args) {
  std::vector<std::string> out;
  for (auto const& a : compile_args)
    if (a.rfind("-m", 0) == 0 || a.rfind("-f", 0) == 0 || a.rfind("-O", 0) == 0 ||
        a.rfind("-g", 0) == 0 || a.rfind("-std=", 0) == 0 || a == no_special_math_flag)
      out.push_back(a);
  return out;
}

std::optional<PrecompiledHeader> precompiled_header(Toolchain const& tc,
                                                    PythonEnvironment const& python,
                                                    ModuleCache const& cache,
                                                    std::vector<std::string> const& header_args) {
  if (!tc.launcher.empty()) return std::nullopt;
  if (!tc.precompiled_header) return std::nullopt;
  if (is_clang(tc.identity)) return std::nullopt;

  std::string const key = precompiled_header_key(tc, python, {}, header_args);
  std::string const lock_name = "pch-" + key + ".lock";
  PrivateDir const& headers = cache.headers();
  auto answer = [&](bool use, FileLock lock) -> std::optional<PrecompiledHeader> {
    if (!use) return std::nullopt;
    return PrecompiledHeader{headers.path() / key / pch_header_name, std::move(lock)};
  };
  {
    FileLock in_use = cache.lock(lock_name, FileLock::Mode::shared);
    if (auto use = pch_decided(headers, key)) return answer(*use, std::move(in_use));
  }
  FileLock in_use = cache.lock(lock_name, FileLock::Mode::exclusive);
  if (auto use = pch_decided(headers, key)) return answer(*use, std::move(in_use));

  log_record(LogLevel::info, "one-time setup: precompiling the Python and NumPy headers");
  // The setup only saves time: when it fails, the module compiles without it.
  std::optional<WorkDir> work;
  try {
    work.emplace(cache.make_work_dir("pch-" + key));
    if (!build_pch(tc, python, *work, header_args)) {
      cache.discard(*work);
      return std::nullopt;
    }
    cache.publish(*work, headers, key);
  } catch (BuildInterrupted const&) {
    if (work) cache.discard(*work);
    throw;
  } catch (std::exception const& e) {
    log_record(LogLevel::warning, std::string("one-time setup failed (") + e.what() +
                                      "); compiling without a precompiled header");
    if (work) cache.discard(*work);
    return std::nullopt;
  }
  in_use.share();  // built: other builds (in this process too) may now use it alongside
  return answer(pch_decided(headers, key).value_or(false), std::move(in_use));
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
  auto const base = base_compile(tc, python, module.compile_args);
  cmd.compile.insert(cmd.compile.end(), base.begin(), base.end());
  for (auto const& dir : module.header_dirs) cmd.compile.push_back("-I" + dir);
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

namespace {

std::atomic<InterruptCheck> interrupt_check{nullptr};

/// Waits for `pid`, asking the interrupt check meanwhile (after 1 ms, then every 20 ms at
/// most); on an interrupt, kills the program's process group (the compiler driver and what it
/// runs: cc1plus, as, ld) and throws BuildInterrupted. Returns the wait status.
int wait_for(pid_t pid, std::string const& program) {
  int status = 0;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    pid_t const done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR)
      throw LinkError("waiting for " + program + ": " + std::strerror(errno));
    if (InterruptCheck const check = interrupt_check.load(); check && check()) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      throw BuildInterrupted{};
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace

void set_interrupt_check(InterruptCheck check) { interrupt_check.store(check); }

int run_program(std::vector<std::string> const& argv, fs::path const& log) {
  if (argv.empty()) throw LinkError("run_program: empty command");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // A process group of its own: an interrupt kills the driver and every program it started,
  // and a terminal's Ctrl-C reaches the caller, which decides.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<char*> args;
  for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int const err = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (err != 0) throw LinkError("cannot run " + argv[0] + ": " + std::strerror(err));
  int const status = wait_for(pid, argv[0]);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

namespace {

/// One `path:line[:column]: kind: message` line of gcc or clang output.
struct CompilerLine {
  std::string_view path;
  std::size_t row = 0, column = 0;  // column 0: none given
  std::string_view kind, message;
};

// Digits as a number, saturating instead of overflowing (a hostile log must not throw).
std::size_t saturating_number(std::string_view digits) {
  std::size_t n = 0;
  for (char c : digits) {
    std::size_t const d = static_cast<std::size_t>(c - '0');
    n = n > (SIZE_MAX - d) / 10 ? SIZE_MAX : n * 10 + d;
  }
  return n;
}

// The digits ending just before `end`: their start (== end when there are none).
std::size_t digits_before(std::string_view line, std::size_t end) {
  std::size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  return begin;
}

// A linear scan, no regex (std::regex recurses per character and overflows the stack on long
// lines). The leftmost `: kind: ` preceded by `:line` or `:line:column` after a non-empty path
// wins, as the shortest path in `^(.+?):(\d+)(:(\d+))?: (kind): (.*)$` would. GCC leaves the
// column out on very long lines, so it is optional.
std::optional<CompilerLine> read_compiler_line(std::string_view line) {
  static constexpr std::string_view kinds[] = {"fatal error", "error", "warning", "note"};
  for (std::size_t colon = line.find(": "); colon != std::string_view::npos;
       colon = line.find(": ", colon + 1)) {
    std::string_view kind;
    for (auto k : kinds) {
      auto const rest = line.substr(colon + 2);
      if (rest.size() >= k.size() + 1 && rest.substr(0, k.size()) == k && rest[k.size()] == ':') {
        kind = k;
        break;
      }
    }
    if (kind.empty()) continue;
    // `:digits` right before the colon; one more `:digits` before that means line and column.
    std::size_t const last = digits_before(line, colon);
    if (last == colon || last == 0 || line[last - 1] != ':') continue;
    CompilerLine out;
    out.kind = kind;
    std::size_t path_end = last - 1;
    std::size_t const first = digits_before(line, path_end);
    if (first < path_end && first > 1 && line[first - 1] == ':') {
      out.row = saturating_number(line.substr(first, path_end - first));
      out.column = saturating_number(line.substr(last, colon - last));
      path_end = first - 1;
    } else {
      out.row = saturating_number(line.substr(last, colon - last));
    }
    if (path_end == 0) continue;
    out.path = line.substr(0, path_end);
    std::size_t message_begin = colon + 2 + kind.size() + 1;
    if (message_begin < line.size() && line[message_begin] == ' ') ++message_begin;
    out.message = line.substr(std::min(message_begin, line.size()));
    return out;
  }
  return std::nullopt;
}

// Compiler messages quote user code; a message is kept to a readable size.
std::string bounded_message(std::string_view message) {
  constexpr std::size_t limit = 2000;
  if (message.size() <= limit) return std::string(message);
  return std::string(message.substr(0, limit)) + "... (" + std::to_string(message.size()) +
         " bytes)";
}

}  // namespace

FileId file_named(std::string const& path, SourceManager& sm) {
  FileId file = no_file;
  for (FileId id = 0; id < sm.size(); ++id)
    if (sm.file(id).path() == path) file = id;
  // Only regular files of bounded size: the path comes from the compiler's output.
  if (file == no_file)
    if (auto text = detail::read_regular_file(path); auto* bytes = std::get_if<std::string>(&text))
      file = sm.add(path, std::move(*bytes));
  return file;
}

std::vector<Diagnostic> parse_compiler_output(std::string const& log, SourceManager& sm) {
  std::vector<Diagnostic> out;
  std::string_view const text(log);
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto const m = read_compiler_line(line);
    if (!m) continue;
    FileId const file = file_named(std::string(m->path), sm);
    SourceRange range{};
    if (file != no_file) {
      auto const& f = sm.file(file);
      std::size_t const start = f.line_start(m->row);
      std::size_t const line_end = std::min(f.text().size(), f.text().find('\n', start));
      std::size_t const offset = m->column == 0 || m->column - 1 > line_end - start
                                     ? (m->column ? line_end : start)
                                     : start + m->column - 1;
      range = {file, offset, offset};
    }
    if (m->kind == "note") {
      if (!out.empty()) out.back().notes.push_back({bounded_message(m->message), range});
      continue;
    }
    out.push_back(make_diagnostic(m->kind == "warning" ? compile_warning : compile_error,
                                  bounded_message(m->message), range));
  }
  return out;
}

std::string shell_quote(std::vector<std::string> const& argv) {
  std::string out;
  for (auto const& a : argv) {
    if (!out.empty()) out += ' ';
    bool const plain =
        !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_./=+,:@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace section
