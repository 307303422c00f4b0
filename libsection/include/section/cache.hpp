// The on-disk module cache: content-addressed entries, one lock per key, atomic publication,
// verification on load, ownership and permission checks, and a size cap.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace section {

/// One published module: `<root>/entries/<key>/` with `module.so`, `source.cpp`, `build.log`
/// and `manifest.json` (the library's size and SHA-256, how it was built, for what ops).
struct CacheEntry {
  std::string key;
  std::filesystem::path dir;
  std::filesystem::path library;
  std::string manifest;        ///< the manifest's JSON text
  std::uintmax_t size = 0;     ///< bytes on disk, all files of the entry
  std::int64_t last_used = 0;  ///< seconds since the epoch (the entry directory's mtime)
};

/// What a cache directory holds now.
struct CacheReport {
  std::vector<CacheEntry> entries;
  std::uintmax_t total_size = 0;
};

class ModuleCache {
 public:
  /// `LIBSECTION_CACHE_DIR`, else `$XDG_CACHE_HOME/libsection`, else `~/.cache/libsection`.
  static std::filesystem::path default_root();
  /// `LIBSECTION_CACHE_MAX_BYTES` (suffixes K, M, G allowed), else 1 GiB.
  static std::uintmax_t default_max_bytes();

  /// Creates the directories (mode 0700). Throws `LinkError` when the root is not owned by the
  /// current user or is writable by others.
  explicit ModuleCache(std::filesystem::path root = default_root());

  std::filesystem::path const& root() const { return root_; }
  /// Per-process state remembered across runs (the compiler's identity, ...).
  std::filesystem::path state_dir() const { return root_ / "state"; }
  /// Where a failed build's source, command and log are kept for inspection.
  std::filesystem::path failed_dir(std::string const& key) const { return root_ / "failed" / key; }

  /// A verified entry, or nothing. A corrupt entry (library missing, wrong size or hash, bad
  /// manifest) is removed under its lock. Throws `LinkError` for an entry not owned by the
  /// current user.
  std::optional<CacheEntry> find(std::string const& key);

  /// Builds with `build(work_dir)` under the key's lock unless another process published the
  /// entry first. `build` writes `module.so` (and anything else) into `work_dir` and returns
  /// the manifest fields to record; the directory is then renamed into place. `built` tells
  /// whether this call compiled.
  using Builder = std::function<std::string(std::filesystem::path const& work_dir)>;
  CacheEntry get_or_build(std::string const& key, Builder const& build, bool* built = nullptr);

  CacheReport list() const;
  /// Removes least recently used entries until the total is at most `max_bytes`, and stale
  /// temporary build directories. Entries in use by a build are skipped. Returns what it removed.
  std::vector<std::string> gc(std::uintmax_t max_bytes);
  /// Removes every entry, failed build and temporary directory.
  void clear();

 private:
  std::optional<CacheEntry> verified(std::string const& key);
  std::filesystem::path root_;
};

/// Hex SHA-256 of a file's contents; throws `LinkError` when it cannot be read.
std::string file_sha256(std::filesystem::path const& path);

}  // namespace section
