// Directories the cache trusts, held open: owned by the current user, writable by nobody else,
// and everything inside reached through their descriptors without following symbolic links.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "section/linker/cache/error.hpp"

namespace section {

/// An open file descriptor shared by copies, closed with the last one (-1: none).
class FileHandle {
 public:
  FileHandle() = default;
  explicit FileHandle(int fd);
  int get() const { return fd_ ? *fd_ : -1; }
  explicit operator bool() const { return get() >= 0; }

 private:
  std::shared_ptr<int const> fd_;
};

/// A directory owned by the current user and writable by nobody else, held open: what is done
/// inside goes through its descriptor (`openat`, never following a symbolic link), so renaming
/// or replacing its path afterwards changes nothing for us.
class PrivateDir {
 public:
  PrivateDir() = default;
  /// Opens `path`; with `create`, a missing directory (and missing parents) is created with
  /// mode 0700. A symbolic link is followed only when the current user owns it. Throws
  /// `CacheError` saying why and what to do when the directory is not trustworthy.
  static PrivateDir open(std::filesystem::path const& path, bool create);
  /// A subdirectory, created (0700) when missing; refused like `open`.
  PrivateDir sub(std::string const& name) const;
  /// An existing subdirectory that passes the checks, or nothing (missing, a symbolic link,
  /// another owner's, writable by others: the caller replaces it).
  std::optional<PrivateDir> existing(std::string const& name) const;

  int fd() const { return fd_.get(); }
  std::filesystem::path const& path() const { return path_; }

  /// A regular file's bytes, or nothing when it is missing, a symbolic link or not ours.
  std::optional<std::string> read(std::string const& name) const;
  /// Writes `name` (mode 0600) through a temporary file and a rename. Throws `CacheError`.
  void write(std::string const& name, std::string const& data) const;
  /// Removes a file or a whole tree, never following a symbolic link. Errors are ignored.
  void remove(std::string const& name) const;
  /// Names in the directory (no `.`, `..`).
  std::vector<std::string> names() const;

 private:
  PrivateDir(FileHandle fd, std::filesystem::path path)
      : fd_(std::move(fd)), path_(std::move(path)) {}
  FileHandle fd_;
  std::filesystem::path path_;
};

}  // namespace section
