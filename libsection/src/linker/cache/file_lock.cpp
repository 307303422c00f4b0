// File locks and their holders: one flock per name, the exclusive holder's pid in the file so
// a waiter can name it, a dead holder's lock taken over, and a forked child rid of the locks of
// threads it does not have.
#include "section/linker/cache/file_lock.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "linker/cache/private_dir_detail.hpp"
#include "section/linker/cache/error.hpp"
#include "section/log.hpp"
#include "section/platform.hpp"

namespace section {
namespace fs = std::filesystem;

using detail::remove_at;
using detail::uid_text;

// ---- lock holders --------------------------------------------------------------------------

namespace {

// Who holds a lock, as its exclusive holder recorded it: "<pid> <pid namespace> <host>".
std::string this_holder() {
  static std::string const record = [] {
    char host[256] = "?";
    ::gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    return platform::pid_namespace() + " " + host;
  }();
  return std::to_string(::getpid()) + " " + record + "\n";
}

struct Holder {
  long pid = 0;
  bool here = false;  // in our pid namespace on our host: `kill(pid, 0)` tells about it
  std::string record;
};

Holder holder_of(int fd) {
  char buffer[512];
  ssize_t const n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  Holder h;
  h.record.assign(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
  h.pid = std::atol(h.record.c_str());
  std::string const ours = this_holder();
  h.here = h.pid > 0 && h.record.substr(h.record.find(' ') + 1) == ours.substr(ours.find(' ') + 1);
  return h;
}

bool is_dead(long pid) { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

std::string describe(Holder const& h) {
  if (h.pid <= 0) return "another process (no pid recorded: a shared user)";
  std::string text = "pid " + std::to_string(h.pid);
  if (!h.here) {
    std::string host = h.record.substr(h.record.rfind(' ') + 1);
    if (!host.empty() && host.back() == '\n') host.pop_back();
    return text + " (in another pid namespace or on host " + host + ")";
  }
  if (platform::is_stopped(h.pid))
    return text + ", which is stopped (resume it with `kill -CONT " + std::to_string(h.pid) +
           "` or end it)";
  return text + (is_dead(h.pid) ? ", which is no longer running" : ", which is running");
}

bool same_file(int fd, int dir, std::string const& name) {
  struct stat held {};
  struct stat current {};
  return ::fstat(fd, &held) == 0 &&
         ::fstatat(dir, name.c_str(), &current, AT_SYMLINK_NOFOLLOW) == 0 &&
         held.st_ino == current.st_ino && held.st_dev == current.st_dev;
}

// The lock `fd` (at `dir/name`) is held, but its recorded holder is dead: its descriptor lives
// on in some other process. Unlinks it so the next open makes a fresh lock; under a guard lock,
// so two waiters never both replace it.
bool take_over(int dir, std::string const& name, int fd, Holder const& dead) {
  int const guard =
      ::openat(dir, ".takeover.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (guard < 0) return false;
  bool taken = false;
  if (::flock(guard, LOCK_EX) == 0 && same_file(fd, dir, name) &&
      holder_of(fd).record == dead.record) {
    taken = ::unlinkat(dir, name.c_str(), 0) == 0;
    if (taken)
      log_record(LogLevel::warning, "taking over the lock " + name + " from pid " +
                                        std::to_string(dead.pid) + ", which is no longer running");
  }
  ::close(guard);
  return taken;
}

}  // namespace

// ---- locks ---------------------------------------------------------------------------------

namespace {

/// Opens (creating) the lock file `name` in `dir`. A symbolic link (never followed) or anything
/// else that is not a regular file there is removed and the open tried again, at most three
/// times over one acquisition (`replaced` counts them). Throws `CacheError`.
int open_lock_file(PrivateDir const& dir, std::string const& name, int& replaced) {
  fs::path const path = dir.path() / name;
  while (true) {
    int const fd = ::openat(dir.fd(), name.c_str(),
                            O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_uid != ::geteuid()) {
      ::close(fd);
      throw CacheError("refusing to use the lock " + path.string() + ": it is owned by " +
                       uid_text(st.st_uid) + ", not by the current user (" + uid_text(::geteuid()) +
                       ")");
    }
    if (fd >= 0 && S_ISREG(st.st_mode)) return fd;
    int const err = fd < 0 ? errno : EINVAL;
    if (fd >= 0) ::close(fd);
    if ((err == ELOOP || err == EISDIR || err == EINVAL || err == ENXIO) && replaced++ < 3) {
      remove_at(dir.fd(), name);
      continue;
    }
    throw CacheError("cannot open the lock " + path.string() + ": " + std::strerror(err));
  }
}

/// One non-blocking flock: true when taken, false when another holder has it. Any other
/// failure closes `fd` and throws `CacheError`.
bool try_flock(int fd, FileLock::Mode mode, fs::path const& path) {
  int rc;
  int const operation = (mode == FileLock::Mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  while ((rc = ::flock(fd, operation)) != 0 && errno == EINTR) {
  }
  if (rc == 0) return true;
  if (errno == EWOULDBLOCK) return false;
  int const err = errno;
  ::close(fd);
  throw CacheError("cannot lock " + path.string() + ": " + std::strerror(err));
}

/// The exclusive holder names itself; a shared one clears a record left by a killed holder,
/// which no longer holds anything.
void record_holder(int fd, FileLock::Mode mode) {
  std::string const record = mode == FileLock::Mode::exclusive ? this_holder() : std::string();
  if (::ftruncate(fd, 0) == 0 && !record.empty()) {
    [[maybe_unused]] ssize_t const n = ::pwrite(fd, record.data(), record.size(), 0);
  }
}

/// Waiting for a busy lock: how long so far, whether its holder is dead for long enough to be
/// taken over, and the pause between tries (announced once, bounded by the timeout).
class LockWait {
 public:
  LockWait(fs::path path, double timeout) : path_(std::move(path)), timeout_(timeout) {}

  double waited() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  /// Busy with a dead recorded holder, twice a moment apart (not a new holder that has not
  /// written its pid yet).
  bool holder_long_dead(Holder const& holder) {
    if (!holder.here || !is_dead(holder.pid)) {
      dead_since_ = -1;
      return false;
    }
    if (dead_since_ < 0) {
      dead_since_ = waited();
      return false;
    }
    return waited() - dead_since_ > 0.2;
  }
  void forget_dead_holder() { dead_since_ = -1; }

  /// Sleeps before the next try; past the timeout, closes `fd` and throws `CacheError`.
  void pause(int fd, Holder const& holder) {
    if (waited() >= timeout_) {
      ::close(fd);
      throw CacheError("timed out after " + std::to_string(std::lround(timeout_)) +
                       " s waiting for the lock " + path_.string() + ", held by " +
                       describe(holder) +
                       ". Another process is building or using the same cache entry; wait for it "
                       "or end it. LIBSECTION_LOCK_TIMEOUT sets how many seconds to wait");
    }
    if (!announced_ && waited() >= 2) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", timeout_);
      log_record(LogLevel::info, "waiting for the lock " + path_.string() + ", held by " +
                                     describe(holder) + " (giving up after " + limit + " s)");
      announced_ = true;
    }
    double const left_ms = (timeout_ - waited()) * 1000;
    std::this_thread::sleep_for(std::chrono::milliseconds(
        static_cast<long>(std::max(1.0, std::min<double>(delay_ms_, left_ms)))));
    delay_ms_ = std::min(delay_ms_ * 2, 100);
  }

 private:
  fs::path path_;
  double timeout_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  bool announced_ = false;
  double dead_since_ = -1;  // when the recorded holder was first seen dead
  int delay_ms_ = 2;
};

}  // namespace

namespace {

/// The descriptors of the locks this process holds, with the thread holding each. A child
/// forked while another thread holds a lock (a multiprocessing worker started mid-build) gets
/// a copy of that descriptor, which would keep the lock held for as long as the child lives:
/// the child then waited forever for the entry. After a fork, the child closes the copies of
/// the threads it does not have (flock locks belong to the open file, so the parent's lock is
/// untouched and released by the parent as usual).
class HeldLocks {
 public:
  static HeldLocks& get() {
    static HeldLocks* const held = [] {
      auto* h = new HeldLocks();  // never destroyed: a fork may come at any time
      ::pthread_atfork([] { get().mutex_.lock(); }, [] { get().mutex_.unlock(); },
                       [] { get().forget_other_threads(); });
      return h;
    }();
    return *held;
  }
  void add(int fd) {
    std::lock_guard<std::mutex> guard(mutex_);
    fds_[fd] = std::this_thread::get_id();
  }
  void remove(int fd) {
    std::lock_guard<std::mutex> guard(mutex_);
    fds_.erase(fd);
  }

 private:
  void forget_other_threads() {  // in the child, with the mutex the prepare handler took
    auto const me = std::this_thread::get_id();
    for (auto it = fds_.begin(); it != fds_.end();) {
      if (it->second == me) {
        ++it;
        continue;
      }
      ::close(it->first);
      it = fds_.erase(it);
    }
    mutex_.unlock();
  }
  std::mutex mutex_;
  std::map<int, std::thread::id> fds_;
};

}  // namespace

FileLock::FileLock(PrivateDir const& dir, std::string const& name, Mode mode, double timeout,
                   bool give_up_when_busy)
    : mode_(mode) {
  fs::path const path = dir.path() / name;
  LockWait wait(path, timeout);
  int replaced = 0;
  int fd = -1;
  while (true) {
    if (fd < 0) fd = open_lock_file(dir, name, replaced);
    if (try_flock(fd, mode, path)) {
      // `gc` or a takeover may have unlinked the file while we waited: hold the current one.
      if (!same_file(fd, dir.fd(), name)) {
        ::close(fd);
        fd = -1;
        continue;
      }
      fd_ = fd;
      HeldLocks::get().add(fd);
      record_holder(fd, mode);
      return;
    }
    if (give_up_when_busy) {
      ::close(fd);
      return;
    }
    Holder const holder = holder_of(fd);
    if (wait.holder_long_dead(holder) && take_over(dir.fd(), name, fd, holder)) {
      ::close(fd);
      fd = -1;
      wait.forget_dead_holder();
      continue;
    }
    wait.pause(fd, holder);
  }
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_), mode_(other.mode_) {
  other.fd_ = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    this->~FileLock();
    fd_ = other.fd_;
    mode_ = other.mode_;
    other.fd_ = -1;
  }
  return *this;
}

void FileLock::share() {
  if (fd_ < 0 || mode_ == Mode::shared) return;
  (void)!::ftruncate(fd_, 0);  // the pid names an exclusive holder only
  if (::flock(fd_, LOCK_SH) == 0) mode_ = Mode::shared;
}

FileLock::~FileLock() {
  if (fd_ < 0) return;
  if (mode_ == Mode::exclusive) (void)!::ftruncate(fd_, 0);  // no stale pid left behind
  HeldLocks::get().remove(fd_);
  ::close(fd_);
  fd_ = -1;
}

}  // namespace section
