// Internal: small file helpers for the linker (whole-file reads, atomic writes, temp names).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace section {

/// The file's bytes, or nothing when it cannot be opened.
std::optional<std::string> read_file(std::filesystem::path const& path);
/// Writes to a temporary file beside `path`, then renames it over `path` (mode 0600).
void write_file_atomic(std::filesystem::path const& path, std::string const& data);
/// A name in `dir` no other process or thread uses: `<stem>.<pid>.<counter>.<random>`.
std::filesystem::path unique_temp_path(std::filesystem::path const& dir, std::string const& stem);

/// An exclusive `flock` on a lock file, released on destruction (or when the process dies).
class FileLock {
 public:
  /// Waits for the lock, or with `wait == false` gives up at once if it is busy (`held()`).
  FileLock(std::filesystem::path const& path, bool wait);
  ~FileLock();
  FileLock(FileLock const&) = delete;
  FileLock& operator=(FileLock const&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace section
