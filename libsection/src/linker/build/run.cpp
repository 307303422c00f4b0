// Running a program without a shell, its output appended to a log, while the caller may stop it
// and within its limits: a wall-clock deadline and a bound on the memory each process allocates.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "linker/build/compile.hpp"
#include "linker/cache/private_dir_detail.hpp"
#include "section/platform.hpp"

extern char** environ;

namespace section {
namespace fs = std::filesystem;

namespace {

std::atomic<InterruptCheck> interrupt_check{nullptr};

using Clock = std::chrono::steady_clock;

/// Starts `args` (a path and its arguments) as posix_spawn would, in a process group of its own
/// (an interrupt kills the driver and every program it started: cc1plus, as, ld; a terminal's
/// Ctrl-C reaches the caller, which decides), stdout and stderr appended to `log`, stdin
/// /dev/null; and with its data segment bounded to `memory` bytes (0: unbounded), which
/// posix_spawn cannot set. vfork, as glibc's posix_spawn: the child shares the caller's memory
/// until it execs, so it makes only system calls, with every signal blocked meanwhile; a failed
/// exec leaves its errno in `failed`. Returns the pid; throws `LinkError`.
pid_t start(std::vector<char*> const& args, fs::path const& log, std::uintmax_t memory) {
  sigset_t all, before;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  rlimit limit{};
  limit.rlim_cur = limit.rlim_max = memory == 0 ? RLIM_INFINITY : static_cast<rlim_t>(memory);
  char const* const log_path = log.c_str();
  volatile int failed = 0;
  pid_t const pid = ::vfork();
  if (pid == 0) {
    int const out = ::open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int const in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (::setpgid(0, 0) != 0 || out < 0 || in < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
        ::dup2(out, STDERR_FILENO) < 0 || ::dup2(in, STDIN_FILENO) < 0 ||
        (memory != 0 && ::setrlimit(RLIMIT_DATA, &limit) != 0)) {
      failed = errno;
      ::_exit(127);
    }
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    ::execve(args[0], args.data(), environ);
    failed = errno;
    ::_exit(127);
  }
  int const vfork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0)
    throw LinkError(std::string("cannot run ") + args[0] + ": " + std::strerror(vfork_error));
  if (failed != 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw LinkError(std::string("cannot run ") + args[0] + ": " + std::strerror(failed));
  }
  return pid;
}

/// Kills the process group of `pid` and reaps it.
void kill_group(pid_t pid) {
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

/// Waits for `pid`, asking the interrupt check every 20 ms, until `deadline` (none: the time
/// point's maximum): asleep on the process's descriptor when the system has one, so the end
/// is seen at once, else in growing naps. On an interrupt, kills the program's process group
/// and throws BuildInterrupted. Returns the wait status, or nothing once the deadline passed
/// (the group killed).
std::optional<int> wait_for(pid_t pid, std::string const& program, Clock::time_point deadline) {
  FileHandle const ended(platform::process_descriptor(pid));
  int status = 0;
  auto nap = std::chrono::milliseconds(1);
  for (;;) {
    pid_t const done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR)
      throw LinkError("waiting for " + program + ": " + std::strerror(errno));
    if (InterruptCheck const check = interrupt_check.load(); check && check()) {
      kill_group(pid);
      throw BuildInterrupted{};
    }
    auto const now = Clock::now();
    if (now >= deadline) {
      kill_group(pid);
      return std::nullopt;
    }
    auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (ended.get() >= 0) {
      pollfd wake{ended.get(), POLLIN, 0};
      ::poll(&wake, 1, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 20)));
    } else {
      std::this_thread::sleep_for(std::min({nap, left + std::chrono::milliseconds(1)}));
      nap = std::min(nap * 2, std::chrono::milliseconds(20));
    }
  }
}

/// Whether the text a failed program appended to its log says it ran out of memory (GCC's
/// `out of memory allocating`, `virtual memory exhausted`; clang's and ld's `bad_alloc`).
bool out_of_memory(fs::path const& log, off_t from) {
  FileHandle const fd(::open(log.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  off_t const start = std::max(from, st.st_size - off_t{8192});
  if (::lseek(fd.get(), start, SEEK_SET) != start) return false;
  auto const said = detail::read_fd(fd.get(), 8192).value_or("");
  for (char const* words : {"out of memory", "memory exhausted", "bad_alloc",
                            "Cannot allocate memory", "cannot allocate memory"})
    if (said.find(words) != std::string::npos) return true;
  return false;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

std::string program_name(std::string const& path) {
  std::string const name = fs::path(path).filename().string();
  return name.empty() ? path : name;
}

}  // namespace

void set_interrupt_check(InterruptCheck check) { interrupt_check.store(check); }

std::string ProgramLimits::memory_text() const {
  if (memory >= (std::uintmax_t{1} << 30) && memory % (std::uintmax_t{1} << 30) == 0)
    return std::to_string(memory >> 30) + " GiB";
  if (memory >= (std::uintmax_t{1} << 20)) return std::to_string(memory >> 20) + " MiB";
  return std::to_string(memory) + " bytes";
}

ProgramLimits compiler_limits(Settings const& settings, bool check) {
  ProgramLimits limits;
  limits.seconds = check ? settings.check_timeout : settings.compile_timeout;
  limits.seconds_setting = check ? "LIBSECTION_CHECK_TIMEOUT" : "LIBSECTION_COMPILE_TIMEOUT";
  limits.slow_because = "an `#include` of a FIFO or a device, or a `constexpr` evaluation that "
                        "does not end?";
  limits.memory = settings.compile_memory;
  return limits;
}

int run_program(std::vector<std::string> const& argv, fs::path const& log,
                ProgramLimits const& limits) {
  if (argv.empty()) throw LinkError("run_program: empty command");
  std::vector<char*> args;
  for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  struct stat before {};
  off_t const logged = ::stat(log.c_str(), &before) == 0 ? before.st_size : 0;
  auto deadline = Clock::time_point::max();
  if (limits.seconds > 0 && limits.seconds < 1e7)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(limits.seconds));
  pid_t const pid = start(args, log, limits.memory);
  auto const status = wait_for(pid, argv[0], deadline);
  std::string const program = "`" + program_name(argv[0]) + "`";
  if (!status)
    throw ProgramStopped(
        program + " was stopped after " + seconds_text(limits.seconds) + " s, the limit " +
        limits.seconds_setting + " sets" +
        (*limits.slow_because ? std::string(" (") + limits.slow_because + ")" : std::string()));
  if (WIFSIGNALED(*status)) return 128 + WTERMSIG(*status);
  if (WEXITSTATUS(*status) != 0 && limits.memory != 0 && out_of_memory(log, logged))
    throw ProgramStopped(program + " ran out of the " + limits.memory_text() +
                         " each compiler process may allocate, the limit "
                         "LIBSECTION_COMPILE_MEMORY sets (an `#include` of a device such as "
                         "/dev/zero?)");
  return WEXITSTATUS(*status);
}

}  // namespace section
