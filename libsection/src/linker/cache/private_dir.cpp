// Private directories and file handles: the cache's directories, each checked (owned by the
// current user, writable by nobody else) and held open, and every file inside reached through
// them with openat(…, O_NOFOLLOW).
#include "section/linker/cache/private_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "linker/cache/files.hpp"
#include "linker/cache/private_dir_detail.hpp"
#include "section/linker/cache/error.hpp"

namespace section {
namespace fs = std::filesystem;

FileHandle::FileHandle(int fd) {
  if (fd >= 0)
    fd_ = std::shared_ptr<int const>(new int(fd), [](int const* p) {
      ::close(*p);
      delete p;
    });
}

namespace detail {

std::optional<std::string> read_fd(int fd, std::size_t expected) {
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
  throw CacheError("refusing to use the cache directory " + path.string() + ": " + why);
}

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

}  // namespace detail

// The helpers, unqualified as they were written.
using detail::open_dir_at;
using detail::read_fd;
using detail::refuse;
using detail::remove_at;
using detail::uid_text;
using detail::untrusted_because;

namespace {

// Creates each missing directory of `path` with mode 0700.
void make_dirs(fs::path const& path) {
  fs::path partial;
  for (auto const& part : path) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throw CacheError("cannot create the cache directory " + partial.string() + ": " +
                       std::strerror(errno));
  }
}

}  // namespace

// ---- verified directories ------------------------------------------------------------------

PrivateDir PrivateDir::open(fs::path const& path, bool create) {
  if (path.empty()) throw CacheError("the cache directory is an empty path");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT || !create)
      throw CacheError("cannot use the cache directory " + path.string() + ": " +
                       std::strerror(errno));
    make_dirs(path);
    if (::lstat(path.c_str(), &st) != 0)
      throw CacheError("cannot use the cache directory " + path.string() + ": " +
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
    throw CacheError(
        "cannot use the cache directory " + path.string() + ": " +
        (errno == ENOTDIR ? std::string("it is not a directory") : std::strerror(errno)));
  PrivateDir dir(FileHandle(fd), path);
  if (::fstat(fd, &st) != 0)
    throw CacheError("cannot use the cache directory " + path.string() + ": " +
                     std::strerror(errno));
  if (auto why = untrusted_because(path, st); !why.empty()) refuse(path, why);
  return dir;
}

PrivateDir PrivateDir::sub(std::string const& name) const {
  fs::path const path = path_ / name;
  if (::mkdirat(fd(), name.c_str(), 0700) != 0 && errno != EEXIST)
    throw CacheError("cannot create the cache directory " + path.string() + ": " +
                     std::strerror(errno));
  int const sub_fd = open_dir_at(fd(), name);
  if (sub_fd < 0) {
    int const err = errno;
    struct stat st {};
    if (::fstatat(fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
      refuse(path, "it is a symbolic link, and every directory in the cache must be a real one. "
                   "Remove it (`rm " +
                       path.string() + "`)");
    throw CacheError("cannot use the cache directory " + path.string() + ": " +
                     (err == ENOTDIR ? std::string("it is not a directory") : std::strerror(err)));
  }
  PrivateDir dir(FileHandle(sub_fd), path);
  struct stat st {};
  if (::fstat(sub_fd, &st) != 0)
    throw CacheError("cannot use the cache directory " + path.string() + ": " +
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
    throw CacheError("cannot write " + (path_ / name).string() + ": " + std::strerror(errno));
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
    throw CacheError("cannot write " + (path_ / name).string() + ": " + std::strerror(err));
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

}  // namespace section
