// The module cache. Layout under the root (every directory 0700 and owned by the user):
//   entries/<key>/     module.so, source.cpp, build.log, manifest.json (published by rename)
//   pch/<key>/         a precompiled prelude header and its verdict (the one-time setup)
//   locks/<name>.lock  one flock per key; the exclusive holder writes its pid into it
//   tmp/<work>/        builds in progress, each holding its `.in-use` file locked while alive
//   failed/<key>/      source, command and log of the last failed build of a key
//   state/             what is remembered across processes (the compiler's identity)
// Every file inside is opened with openat(…, O_NOFOLLOW) from these verified directories.
#include "section/cache.hpp"
#include "section/log.hpp"
#include "section/platform.hpp"

#include <dirent.h>
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
#include <nlohmann/json.hpp>
#include <thread>

#include "base/hash.hpp"
#include "linker/files.hpp"
#include "section/module.hpp"

namespace section {
namespace fs = std::filesystem;

FileHandle::FileHandle(int fd) {
  if (fd >= 0)
    fd_ = std::shared_ptr<int const>(new int(fd), [](int const* p) {
      ::close(*p);
      delete p;
    });
}

namespace {

char const* const in_use_file = ".in-use";

std::optional<std::string> read_fd(int fd, std::size_t expected = 0) {
  std::string data;
  data.reserve(expected);
  char buffer[1 << 16];
  while (true) {
    ssize_t const n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return data;
    data.append(buffer, static_cast<std::size_t>(n));
  }
}

int open_dir_at(int parent, std::string const& name) {
  return ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

std::string mode_text(mode_t mode) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%04o", static_cast<unsigned>(mode & 07777));
  return buffer;
}

std::string uid_text(uid_t uid) { return "uid " + std::to_string(uid); }

bool writable_by_others(struct stat const& st) { return st.st_mode & (S_IWGRP | S_IWOTH); }

// Why a directory of the cache cannot be trusted, with what to do about it; empty when it can.
std::string untrusted_because(fs::path const& path, struct stat const& st) {
  if (st.st_uid != ::geteuid())
    return "it is owned by " + uid_text(st.st_uid) + ", not by the current user (" +
           uid_text(::geteuid()) +
           "), so that user decides what is loaded from it. If it was left by a run as that user "
           "(e.g. with sudo), remove it as that user; otherwise set LIBSECTION_CACHE_DIR to a "
           "directory of your own";
  if (writable_by_others(st))
    return "it is writable by other users (mode " + mode_text(st.st_mode) +
           "), so they could plant modules in it. If only you use it, run `chmod 700 " +
           path.string() + "`; otherwise set LIBSECTION_CACHE_DIR to a directory of your own";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  return {};
}

[[noreturn]] void refuse(fs::path const& path, std::string const& why) {
  throw LinkError("refusing to use the cache directory " + path.string() + ": " + why);
}

// Creates each missing directory of `path` with mode 0700.
void make_dirs(fs::path const& path) {
  fs::path partial;
  for (auto const& part : path) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throw LinkError("cannot create the cache directory " + partial.string() + ": " +
                      std::strerror(errno));
  }
}

// Removes `name` in `parent` (a file, or a tree, depth first), never following a link.
void remove_at(int parent, std::string const& name) {
  if (::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT) return;
  int const dir = open_dir_at(parent, name);
  if (dir < 0) return;
  if (DIR* d = ::fdopendir(dir)) {
    std::vector<std::string> children;
    while (dirent const* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        children.emplace_back(e->d_name);
    for (auto const& child : children) remove_at(::dirfd(d), child);
    ::closedir(d);
  } else {
    ::close(dir);
  }
  ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
}

// Opens a file of an entry for reading: a regular file of ours that nobody else can write.
// Returns -1 with `problem` set when it is missing or damaged; throws for another owner.
int open_entry_file(int dir, std::string const& name, fs::path const& shown, struct stat& st,
                    std::string& problem) {
  int const fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    problem = errno == ELOOP ? name + " is a symbolic link"
                             : name + " cannot be opened (" + std::strerror(errno) + ")";
    return -1;
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    problem = name + " is not a regular file";
    return -1;
  }
  if (st.st_uid != ::geteuid()) {
    ::close(fd);
    throw LinkError("refusing to use " + shown.string() + ": it is owned by " +
                    uid_text(st.st_uid) + ", not by the current user (" + uid_text(::geteuid()) +
                    "); remove it as that user, or set LIBSECTION_CACHE_DIR to a directory of "
                    "your own");
  }
  if (writable_by_others(st)) {
    ::close(fd);
    problem = name + " is writable by other users (mode " + mode_text(st.st_mode) + ")";
    return -1;
  }
  return fd;
}

std::uintmax_t tree_size(fs::path const& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

std::int64_t mtime_at(int dir, std::string const& name) {
  struct stat st {};
  return ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0
             ? static_cast<std::int64_t>(st.st_mtim.tv_sec)
             : 0;
}

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool valid_key(std::string const& key) {
  return !key.empty() && key.size() <= 128 && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
  });
}

// ---- lock holders --------------------------------------------------------------------------

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

// ---- verified directories ------------------------------------------------------------------

PrivateDir PrivateDir::open(fs::path const& path, bool create) {
  if (path.empty()) throw LinkError("the cache directory is an empty path");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT || !create)
      throw LinkError("cannot use the cache directory " + path.string() + ": " +
                      std::strerror(errno));
    make_dirs(path);
    if (::lstat(path.c_str(), &st) != 0)
      throw LinkError("cannot use the cache directory " + path.string() + ": " +
                      std::strerror(errno));
  }
  int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  if (S_ISLNK(st.st_mode)) {
    if (st.st_uid != ::geteuid())
      refuse(path, "it is a symbolic link owned by " + uid_text(st.st_uid) +
                       ", not by the current user (" + uid_text(::geteuid()) +
                       "), so that user decides where it points. Remove the link, or set "
                       "LIBSECTION_CACHE_DIR to a directory of your own");
    flags &= ~O_NOFOLLOW;  // the user's own link (e.g. to a bigger disk); its target is checked
  }
  int const fd = ::open(path.c_str(), flags);
  if (fd < 0)
    throw LinkError(
        "cannot use the cache directory " + path.string() + ": " +
        (errno == ENOTDIR ? std::string("it is not a directory") : std::strerror(errno)));
  PrivateDir dir(FileHandle(fd), path);
  if (::fstat(fd, &st) != 0)
    throw LinkError("cannot use the cache directory " + path.string() + ": " +
                    std::strerror(errno));
  if (auto why = untrusted_because(path, st); !why.empty()) refuse(path, why);
  return dir;
}

PrivateDir PrivateDir::sub(std::string const& name) const {
  fs::path const path = path_ / name;
  if (::mkdirat(fd(), name.c_str(), 0700) != 0 && errno != EEXIST)
    throw LinkError("cannot create the cache directory " + path.string() + ": " +
                    std::strerror(errno));
  int const sub_fd = open_dir_at(fd(), name);
  if (sub_fd < 0) {
    int const err = errno;
    struct stat st {};
    if (::fstatat(fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
      refuse(path, "it is a symbolic link, and every directory in the cache must be a real one. "
                   "Remove it (`rm " +
                       path.string() + "`)");
    throw LinkError("cannot use the cache directory " + path.string() + ": " +
                    (err == ENOTDIR ? std::string("it is not a directory") : std::strerror(err)));
  }
  PrivateDir dir(FileHandle(sub_fd), path);
  struct stat st {};
  if (::fstat(sub_fd, &st) != 0)
    throw LinkError("cannot use the cache directory " + path.string() + ": " +
                    std::strerror(errno));
  if (auto why = untrusted_because(path, st); !why.empty()) refuse(path, why);
  return dir;
}

std::optional<PrivateDir> PrivateDir::existing(std::string const& name) const {
  int const sub_fd = open_dir_at(fd(), name);
  if (sub_fd < 0) return std::nullopt;
  PrivateDir dir(FileHandle(sub_fd), path_ / name);
  struct stat st {};
  if (::fstat(sub_fd, &st) != 0 || !untrusted_because(dir.path(), st).empty()) return std::nullopt;
  return dir;
}

std::optional<std::string> PrivateDir::read(std::string const& name) const {
  int const f = ::openat(fd(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (f < 0) return std::nullopt;
  FileHandle handle(f);
  struct stat st {};
  if (::fstat(f, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return std::nullopt;
  return read_fd(f, static_cast<std::size_t>(st.st_size));
}

void PrivateDir::write(std::string const& name, std::string const& data) const {
  std::string const tmp = unique_name("." + name);
  int const f =
      ::openat(fd(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (f < 0)
    throw LinkError("cannot write " + (path_ / name).string() + ": " + std::strerror(errno));
  int err = 0;
  for (std::size_t done = 0; done < data.size() && !err;) {
    ssize_t const n = ::write(f, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    else done += static_cast<std::size_t>(n);
  }
  if (::close(f) != 0 && !err) err = errno;  // a full disk may only show here
  if (!err && ::renameat(fd(), tmp.c_str(), fd(), name.c_str()) != 0) err = errno;
  if (err) {
    ::unlinkat(fd(), tmp.c_str(), 0);
    throw LinkError("cannot write " + (path_ / name).string() + ": " + std::strerror(err));
  }
}

void PrivateDir::remove(std::string const& name) const { remove_at(fd(), name); }

std::vector<std::string> PrivateDir::names() const {
  std::vector<std::string> out;
  int const again = ::openat(fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (again < 0) return out;
  DIR* d = ::fdopendir(again);
  if (!d) {
    ::close(again);
    return out;
  }
  while (dirent const* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

// ---- locks ---------------------------------------------------------------------------------

namespace {

/// Opens (creating) the lock file `name` in `dir`. A symbolic link (never followed) or anything
/// else that is not a regular file there is removed and the open tried again, at most three
/// times over one acquisition (`replaced` counts them). Throws `LinkError`.
int open_lock_file(PrivateDir const& dir, std::string const& name, int& replaced) {
  fs::path const path = dir.path() / name;
  while (true) {
    int const fd = ::openat(dir.fd(), name.c_str(),
                            O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_uid != ::geteuid()) {
      ::close(fd);
      throw LinkError("refusing to use the lock " + path.string() + ": it is owned by " +
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
    throw LinkError("cannot open the lock " + path.string() + ": " + std::strerror(err));
  }
}

/// One non-blocking flock: true when taken, false when another holder has it. Any other
/// failure closes `fd` and throws `LinkError`.
bool try_flock(int fd, FileLock::Mode mode, fs::path const& path) {
  int rc;
  int const operation = (mode == FileLock::Mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  while ((rc = ::flock(fd, operation)) != 0 && errno == EINTR) {
  }
  if (rc == 0) return true;
  if (errno == EWOULDBLOCK) return false;
  int const err = errno;
  ::close(fd);
  throw LinkError("cannot lock " + path.string() + ": " + std::strerror(err));
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

  /// Sleeps before the next try; past the timeout, closes `fd` and throws `LinkError`.
  void pause(int fd, Holder const& holder) {
    if (waited() >= timeout_) {
      ::close(fd);
      throw LinkError("timed out after " + std::to_string(std::lround(timeout_)) +
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

// ---- settings ------------------------------------------------------------------------------

Settings linker_settings() {
  try {
    return read_settings();
  } catch (SettingsError const& e) {
    throw LinkError(e.what());
  }
}

fs::path ModuleCache::default_root() {
  if (auto dir = linker_settings().cache_dir) return *dir;
  if (char const* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "libsection";
  if (char const* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "libsection";
  throw LinkError("no cache directory: set LIBSECTION_CACHE_DIR or HOME");
}

std::uintmax_t ModuleCache::parse_size(std::string const& text, std::string const& what) {
  try {
    return section::parse_size(text, what);
  } catch (SettingsError const& e) {
    throw LinkError(e.what());
  }
}

std::uintmax_t ModuleCache::default_max_bytes() { return linker_settings().cache_max_bytes; }

double ModuleCache::default_lock_timeout() { return linker_settings().lock_timeout; }

// ---- the cache -----------------------------------------------------------------------------

struct ModuleCache::Verified {
  std::optional<CacheEntry> entry;
  std::string problem;  // why the entry is corrupt; empty (and no entry): it does not exist
};

ModuleCache::ModuleCache(fs::path const& root) : ModuleCache(root, true) {}

ModuleCache::ModuleCache(fs::path const& root, bool create) {
  // The settings are read first, all at once: a typo fails before anything is created or built.
  Settings const settings = linker_settings();
  max_bytes_ = settings.cache_max_bytes;
  lock_timeout_ = settings.lock_timeout;
  root_ = PrivateDir::open(root, create);
  entries_ = root_.sub("entries");
  locks_ = root_.sub("locks");
  tmp_ = root_.sub("tmp");
  failed_ = root_.sub("failed");
  state_ = root_.sub("state");
  pch_ = root_.sub("pch");
}

std::optional<ModuleCache> ModuleCache::open_existing(fs::path const& root) {
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
  return ModuleCache(root, false);
}

FileLock ModuleCache::lock(std::string const& name, FileLock::Mode mode,
                           bool give_up_when_busy) const {
  return FileLock(locks_, name, mode, lock_timeout_, give_up_when_busy);
}

WorkDir ModuleCache::make_work_dir(std::string const& stem) const {
  std::string const name = unique_name(stem);
  if (::mkdirat(tmp_.fd(), name.c_str(), 0700) != 0)
    throw LinkError("cannot create " + (tmp_.path() / name).string() + ": " + std::strerror(errno));
  PrivateDir dir = tmp_.sub(name);
  FileLock in_use(dir, in_use_file, FileLock::Mode::exclusive, 0);
  return WorkDir{std::move(dir), name, std::move(in_use)};
}

void ModuleCache::publish(WorkDir& work, PrivateDir const& into, std::string const& name) const {
  work.dir.remove(in_use_file);  // stays locked (we keep the descriptor) until `work` ends
  for (int attempt = 0;; ++attempt) {
    if (::renameat(tmp_.fd(), work.name.c_str(), into.fd(), name.c_str()) == 0) return;
    int const err = errno;
    if (attempt == 0 && err != ENOENT && err != EXDEV) {  // something (damaged) is in the way
      remove_entry(into, name);
      continue;
    }
    throw LinkError("cannot publish " + (into.path() / name).string() + ": " + std::strerror(err));
  }
}

void ModuleCache::discard(WorkDir& work) const { tmp_.remove(work.name); }

void ModuleCache::remove_entry(PrivateDir const& parent, std::string const& name) const {
  // Out of sight first, so no reader ever sees it half-deleted.
  std::string const doomed = unique_name("removing");
  if (::renameat(parent.fd(), name.c_str(), tmp_.fd(), doomed.c_str()) == 0) tmp_.remove(doomed);
  else parent.remove(name);
}

namespace {

/// Why an entry's manifest does not describe the entry of `key`; empty when it does.
std::string manifest_problem(nlohmann::json const& manifest, std::string const& key) {
  if (manifest.is_discarded() || !manifest.is_object()) return "manifest.json is not a JSON object";
  auto const field = [&](char const* name) {
    return manifest.contains(name) ? manifest[name] : nlohmann::json();
  };
  if (!field("key").is_string() || field("key").get<std::string>() != key)
    return "manifest.json names another key";
  if (!field("size").is_number_unsigned()) return "manifest.json has no size in bytes";
  if (!field("sha256").is_string()) return "manifest.json has no sha256 text";
  return {};
}

/// Why the library (`fd`, of the size `st` gives) is not the one `manifest` describes; empty
/// when its size and SHA-256 match. The bytes hashed here are the bytes loaded: the caller
/// loads through this descriptor.
std::string library_problem(int fd, struct stat const& st, nlohmann::json const& manifest) {
  auto const expected_size = manifest["size"].get<std::uintmax_t>();
  if (static_cast<std::uintmax_t>(st.st_size) != expected_size)
    return "module.so is " + std::to_string(st.st_size) + " bytes, the manifest says " +
           std::to_string(expected_size);
  auto const bytes = read_fd(fd, static_cast<std::size_t>(st.st_size));
  if (!bytes || bytes->size() != expected_size) return "module.so cannot be read whole";
  if (detail::sha256_hex(*bytes) != manifest["sha256"].get<std::string>())
    return "module.so does not match the SHA-256 in the manifest";
  return {};
}

}  // namespace

ModuleCache::Verified ModuleCache::verified(std::string const& key) {
  fs::path const dir_path = entries_.path() / key;
  int const dir_fd = open_dir_at(entries_.fd(), key);
  if (dir_fd < 0) {
    struct stat st {};
    if (errno == ENOENT || ::fstatat(entries_.fd(), key.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return {};
    return {std::nullopt, S_ISLNK(st.st_mode) ? "it is a symbolic link" : "it is not a directory"};
  }
  FileHandle dir(dir_fd);
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0) return {std::nullopt, std::strerror(errno)};
  if (st.st_uid != ::geteuid()) refuse(dir_path, untrusted_because(dir_path, st));
  if (writable_by_others(st))
    return {std::nullopt, "it is writable by other users (mode " + mode_text(st.st_mode) + ")"};

  std::string problem;
  int const manifest_fd =
      open_entry_file(dir_fd, "manifest.json", dir_path / "manifest.json", st, problem);
  if (manifest_fd < 0) return {std::nullopt, problem};
  FileHandle manifest_file(manifest_fd);
  auto manifest_text = read_fd(manifest_fd);
  if (!manifest_text) return {std::nullopt, "manifest.json cannot be read"};
  auto const manifest = nlohmann::json::parse(*manifest_text, nullptr, false);
  if (problem = manifest_problem(manifest, key); !problem.empty()) return {std::nullopt, problem};

  int const library_fd = open_entry_file(dir_fd, "module.so", dir_path / "module.so", st, problem);
  if (library_fd < 0) return {std::nullopt, problem};
  FileHandle library(library_fd);
  if (problem = library_problem(library_fd, st, manifest); !problem.empty())
    return {std::nullopt, problem};

  CacheEntry entry{key, dir_path, dir_path / "module.so", std::move(*manifest_text), 0, 0, library};
  entry.size = tree_size(dir_path);
  ::futimens(dir_fd, nullptr);  // marks it recently used, for gc
  entry.last_used = ::fstat(dir_fd, &st) == 0 ? static_cast<std::int64_t>(st.st_mtim.tv_sec) : 0;
  return {std::move(entry), {}};
}

std::optional<CacheEntry> ModuleCache::find(std::string const& key) {
  if (!valid_key(key)) throw LinkError("invalid cache key `" + key + "`");
  auto found = verified(key);
  if (found.entry || found.problem.empty()) return std::move(found.entry);
  // Damaged: look again under the key's lock (a builder may be replacing it), then drop it.
  FileLock lock = this->lock(key + ".lock", FileLock::Mode::exclusive);
  found = verified(key);
  if (found.entry || found.problem.empty()) return std::move(found.entry);
  log_record(LogLevel::warning, "cache entry " + (entries_.path() / key).string() +
                                    " is corrupt (" + found.problem + "); removing it");
  remove_entry(entries_, key);
  return std::nullopt;
}

CacheEntry ModuleCache::get_or_build(std::string const& key, Builder const& build, bool* built) {
  if (built) *built = false;
  if (auto entry = find(key)) return std::move(*entry);

  FileLock lock = this->lock(key + ".lock", FileLock::Mode::exclusive);
  // Another process may have built it while we waited for the lock.
  if (auto found = verified(key); found.entry) return std::move(*found.entry);
  else if (!found.problem.empty()) remove_entry(entries_, key);

  WorkDir work = make_work_dir(key.substr(0, 16));
  try {
    auto manifest = nlohmann::json::parse(build(work.dir), nullptr, false);
    if (manifest.is_discarded() || !manifest.is_object())
      throw LinkError("the build of cache entry " + key +
                      " returned a manifest that is not a JSON object");
    struct stat st {};
    std::string problem;
    int const library_fd =
        open_entry_file(work.dir.fd(), "module.so", work.dir.path() / "module.so", st, problem);
    if (library_fd < 0)
      throw LinkError("the build of cache entry " + key +
                      " produced no usable module.so: " + problem);
    FileHandle library(library_fd);
    auto const bytes = read_fd(library_fd, static_cast<std::size_t>(st.st_size));
    if (!bytes) throw LinkError("cannot read " + (work.dir.path() / "module.so").string());
    manifest["key"] = key;
    manifest["size"] = static_cast<std::uintmax_t>(bytes->size());
    manifest["sha256"] = detail::sha256_hex(*bytes);
    manifest["created"] = now_seconds();
    work.dir.write("manifest.json", manifest.dump(2) + "\n");
    publish(work, entries_, key);
  } catch (...) {
    tmp_.remove(work.name);
    throw;
  }
  if (built) *built = true;
  auto found = verified(key);
  if (!found.entry)
    throw LinkError("cache entry " + (entries_.path() / key).string() +
                    " failed verification right after publishing: " + found.problem);
  gc(max_bytes_);
  return std::move(*found.entry);
}

CacheReport ModuleCache::list() const {
  CacheReport report;
  for (auto [dir, into] :
       {std::pair{&entries_, &report.entries}, std::pair{&pch_, &report.headers}}) {
    for (auto const& name : dir->names()) {
      CacheEntry entry;
      entry.key = name;
      entry.dir = dir->path() / name;
      entry.library = entry.dir / "module.so";
      if (int const d = open_dir_at(dir->fd(), name); d >= 0) {
        int const m = ::openat(d, "manifest.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (m >= 0) {
          entry.manifest = read_fd(m).value_or("");
          ::close(m);
        }
        ::close(d);
      }
      entry.size = tree_size(entry.dir);
      entry.last_used = mtime_at(dir->fd(), name);
      report.total_size += entry.size;
      into->push_back(std::move(entry));
    }
    std::sort(into->begin(), into->end(),
              [](auto const& a, auto const& b) { return a.last_used > b.last_used; });
  }
  return report;
}

void ModuleCache::reclaim_leftovers() const {
  // A work directory is a leftover when nobody holds its `.in-use` lock any more (its builder
  // was killed). Young ones are skipped: their builder may not have locked it yet.
  auto const now = now_seconds();
  for (auto const& name : tmp_.names()) {
    if (name.rfind("removing.", 0) == 0) {  // a removal that was interrupted
      tmp_.remove(name);
      continue;
    }
    if (now - mtime_at(tmp_.fd(), name) < 60) continue;
    int const dir = open_dir_at(tmp_.fd(), name);
    if (dir < 0) {
      tmp_.remove(name);
      continue;
    }
    int const in_use = ::openat(dir, in_use_file, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    bool const busy = in_use >= 0 && ::flock(in_use, LOCK_EX | LOCK_NB) != 0;
    if (in_use >= 0) ::close(in_use);
    ::close(dir);
    if (!busy) tmp_.remove(name);
  }
  // Older versions kept precompiled headers (and their setups) in state/, outside the cap.
  for (auto const& name : state_.names())
    if (name.rfind("pch-", 0) == 0 || name.rfind("pch.", 0) == 0) state_.remove(name);
}

std::vector<std::string> ModuleCache::gc(std::uintmax_t max_bytes) {
  reclaim_leftovers();
  std::vector<std::string> removed;
  CacheReport const report = list();
  std::uintmax_t total = report.total_size;
  if (total <= max_bytes) return removed;
  // Modules and precompiled headers alike, least recently used first.
  std::vector<std::pair<CacheEntry const*, bool>> items;
  for (auto const& e : report.entries) items.emplace_back(&e, false);
  for (auto const& e : report.headers) items.emplace_back(&e, true);
  std::stable_sort(items.begin(), items.end(), [](auto const& a, auto const& b) {
    return a.first->last_used < b.first->last_used;
  });
  for (auto const& [entry, header] : items) {
    if (total <= max_bytes) break;
    std::string const lock_name = (header ? "pch-" : "") + entry->key + ".lock";
    FileLock lock = this->lock(lock_name, FileLock::Mode::exclusive, true);
    if (!lock.held()) continue;  // being built, checked or compiled with right now
    remove_entry(header ? pch_ : entries_, entry->key);
    ::unlinkat(locks_.fd(), lock_name.c_str(), 0);
    total -= std::min(total, entry->size);
    removed.push_back(entry->key);
  }
  return removed;
}

std::vector<std::string> ModuleCache::clear() {
  std::vector<std::string> in_use;
  for (auto [dir, prefix] : {std::pair{&entries_, ""}, std::pair{&pch_, "pch-"}}) {
    for (auto const& name : dir->names()) {
      std::string const lock_name = prefix + name + ".lock";
      FileLock lock = this->lock(lock_name, FileLock::Mode::exclusive, true);
      if (!lock.held()) {
        in_use.push_back(name);
        continue;
      }
      remove_entry(*dir, name);
      ::unlinkat(locks_.fd(), lock_name.c_str(), 0);
    }
  }
  for (auto const& name : failed_.names()) failed_.remove(name);
  reclaim_leftovers();
  return in_use;
}

}  // namespace section
