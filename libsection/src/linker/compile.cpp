// Finding and running the compiler; compiler output → diagnostics.
#include "section/compile.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "expand/sha256.hpp"
#include "linker/files.hpp"

extern char** environ;

namespace section {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_blanks(char const* text) {
  std::vector<std::string> words;
  std::istringstream in(text ? text : "");
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

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
std::string compiler_identity(fs::path const& compiler, fs::path const& state_dir) {
  struct stat st{};
  if (::stat(compiler.c_str(), &st) != 0)
    throw LinkError("cannot stat the compiler " + compiler.string() + ": " + std::strerror(errno));
  std::string const stamp = compiler.string() + "\n" + std::to_string(st.st_size) + "\n" +
                            std::to_string(st.st_mtim.tv_sec) + "." +
                            std::to_string(st.st_mtim.tv_nsec);
  fs::path const remembered = state_dir / ("compiler-" + detail::sha256_hex(stamp).substr(0, 24));
  if (auto text = read_file(remembered); text && !text->empty()) return *text;

  fs::create_directories(state_dir);
  fs::path const log = unique_temp_path(state_dir, "version");
  int const status = run_program({compiler.string(), "--version"}, log);
  std::string first_line = read_file(log).value_or("");
  fs::remove(log);
  first_line = first_line.substr(0, first_line.find('\n'));
  if (status != 0 || first_line.empty())
    throw LinkError("the compiler " + compiler.string() + " does not answer `--version`");
  std::string const identity = compiler.string() + ": " + first_line;
  write_file_atomic(remembered, identity);
  return identity;
}

}  // namespace

Toolchain find_toolchain(fs::path const& state_dir) {
  Toolchain tc;
  tc.launcher = split_blanks(std::getenv("LIBSECTION_COMPILER_LAUNCHER"));
  if (!tc.launcher.empty()) {
    auto resolved = find_on_path(tc.launcher[0]);
    if (!resolved)
      throw LinkError("LIBSECTION_COMPILER_LAUNCHER names `" + tc.launcher[0] +
                      "`, which is not an executable on PATH");
    tc.launcher[0] = resolved->string();
  }
  std::vector<std::string> cxx = split_blanks(std::getenv("CXX"));
  if (!cxx.empty()) {
    auto resolved = find_on_path(cxx[0]);
    if (!resolved)
      throw LinkError("CXX names `" + cxx[0] + "`, which is not an executable on PATH");
    cxx[0] = resolved->string();
  } else {
    for (char const* candidate : {"c++", "g++", "clang++"})
      if (auto resolved = find_on_path(candidate)) {
        cxx = {resolved->string()};
        break;
      }
    if (cxx.empty())
      throw LinkError("no C++ compiler found: set CXX, or install g++ or clang++ "
                      "(searched PATH for c++, g++ and clang++)");
  }
  tc.compiler = cxx;
  tc.identity = compiler_identity(cxx[0], state_dir);
  for (std::size_t i = 1; i < cxx.size(); ++i) tc.identity += " " + cxx[i];
  // No -march=native: modules stay valid on every machine sharing a cache, and no CPU probe
  // is needed. Extra flags (e.g. -march=native) come from LIBSECTION_CXXFLAGS and enter the key.
  tc.flags = {"-std=c++17", "-O3", "-fPIC", "-fvisibility=hidden", "-fno-math-errno",
              "-Wno-unused-label", "-Wno-unused-variable", "-Wno-unused-but-set-variable",
              "-Wno-write-strings"};
  for (auto& f : split_blanks(std::getenv("LIBSECTION_CXXFLAGS"))) tc.flags.push_back(f);
  return tc;
}

CompileCommands compile_commands(Toolchain const& tc, PythonEnvironment const& python,
                                 ModuleSource const& module, fs::path const& source,
                                 fs::path const& object, fs::path const& library) {
  CompileCommands cmd;
  cmd.compile = tc.launcher;
  cmd.compile.insert(cmd.compile.end(), tc.compiler.begin(), tc.compiler.end());
  cmd.compile.insert(cmd.compile.end(), tc.flags.begin(), tc.flags.end());
  cmd.compile.insert(cmd.compile.end(), module.compile_args.begin(), module.compile_args.end());
  for (auto const& dir : python.include_dirs) cmd.compile.push_back("-I" + dir);
  cmd.compile.insert(cmd.compile.end(), {"-c", "-x", "c++", source.string(), "-o", object.string()});

  // Linking is a separate step so ccache/sccache/distcc can cache and distribute the compile.
  cmd.link = tc.compiler;
  cmd.link.insert(cmd.link.end(), {"-shared", "-o", library.string(), object.string()});
  for (auto const& lib : module.libraries) cmd.link.push_back("-l" + lib);
  return cmd;
}

int run_program(std::vector<std::string> const& argv, fs::path const& log) {
  if (argv.empty()) throw LinkError("run_program: empty command");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int const err = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw LinkError("cannot run " + argv[0] + ": " + std::strerror(err));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw LinkError("waiting for " + argv[0] + ": " + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::vector<Diagnostic> parse_compiler_output(std::string const& log, SourceManager& sm) {
  static std::regex const line_re(
      R"(^(.+?):(\d+):(\d+): (fatal error|error|warning|note): (.*)$)");
  std::vector<Diagnostic> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    std::string const path = m[1];
    std::size_t const row = std::stoul(m[2]);
    std::size_t const column = std::stoul(m[3]);
    std::string const kind = m[4];
    FileId file = no_file;
    for (FileId id = 0; id < sm.size(); ++id)
      if (sm.file(id).path() == path) file = id;
    if (file == no_file)
      if (auto text = read_file(path)) file = sm.add(path, *text);
    SourceRange range{};
    if (file != no_file) {
      auto const& f = sm.file(file);
      std::size_t const start = f.line_start(row);
      std::size_t const line_end = std::min(f.text().size(), f.text().find('\n', start));
      std::size_t const offset = std::min(start + (column ? column - 1 : 0), line_end);
      range = {file, offset, offset};
    }
    if (kind == "note") {
      if (!out.empty()) out.back().notes.push_back({m[5], range});
      continue;
    }
    Diagnostic d;
    d.code = "compile-error";
    d.severity = kind == "warning" ? Severity::warning : Severity::error;
    if (kind == "warning") d.code = "compile-warning";
    d.message = m[5];
    d.range = range;
    out.push_back(std::move(d));
  }
  return out;
}

std::string shell_quote(std::vector<std::string> const& argv) {
  std::string out;
  for (auto const& a : argv) {
    if (!out.empty()) out += ' ';
    bool const plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
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
