// Running a program without a shell, its output appended to a log, while the caller may stop it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "linker/build/compile.hpp"

extern char** environ;

namespace section {
namespace fs = std::filesystem;

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

}  // namespace section
