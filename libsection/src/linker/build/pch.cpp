// The one-time setup: a precompiled header of the module prelude per compiler, flags and Python,
// in the cache's pch/ folder, used by every module that builds with them.
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>

#include "base/hash.hpp"
#include "linker/build/compile.hpp"
#include "section/log.hpp"

namespace section {
namespace fs = std::filesystem;

namespace {

double timed_run(std::vector<std::string> const& argv, fs::path const& log,
                 ProgramLimits const& limits, int& status) {
  auto const start = std::chrono::steady_clock::now();
  status = run_program(argv, log, limits);
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
  timed_run(build, log, tc.limits, status);
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

}  // namespace section
