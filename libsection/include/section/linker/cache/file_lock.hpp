// Locks between processes sharing a cache: an `flock` per name, its exclusive holder named in
// the lock file.
#pragma once

#include <string>

#include "section/linker/cache/private_dir.hpp"

namespace section {

/// An `flock` on `<dir>/<name>`, released on destruction (or when the process dies). The
/// exclusive holder writes its pid into the file, so a waiter that gives up can name it, and a
/// lock whose recorded holder is dead (its descriptor leaked into another process) is taken over.
class FileLock {
 public:
  enum class Mode { exclusive, shared };
  /// Waits up to `timeout_seconds` (0: one try), then throws `CacheError` naming the holder;
  /// with `give_up_when_busy`, returns without the lock instead (`held()` is false).
  FileLock(PrivateDir const& dir, std::string const& name, Mode mode, double timeout_seconds,
           bool give_up_when_busy = false);
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(FileLock const&) = delete;
  FileLock& operator=(FileLock const&) = delete;
  ~FileLock();
  bool held() const { return fd_ >= 0; }
  /// Turns a held exclusive lock into a shared one, e.g. once a setup is built and only in
  /// use: other users may then share it. (flock converts in place; the holder's pid goes.)
  void share();

 private:
  int fd_ = -1;
  Mode mode_ = Mode::exclusive;
};

}  // namespace section
