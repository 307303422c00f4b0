// The on-disk module cache: content-addressed entries, one lock per key, atomic publication,
// verification on load, ownership and permission checks, and a size cap.
//
// Trust model (README, "Security"): every directory from the cache root down must be owned by
// the current user and writable by nobody else, or it is refused with the reason; everything
// inside is opened relative to those verified directories without following symbolic links,
// and a module is loaded from the very file descriptor its SHA-256 was checked through.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "section/linker/cache/file_lock.hpp"
#include "section/linker/cache/manifest.hpp"
#include "section/linker/cache/private_dir.hpp"
#include "section/settings.hpp"

namespace section {

/// A build in progress: a fresh directory in `tmp/` holding a lock file while its builder
/// lives, so `gc` can tell the leftovers of killed builds from running ones.
struct WorkDir {
  PrivateDir dir;
  std::string name;  ///< its name in `tmp/`
  FileLock in_use;
};

/// One published module: `<root>/entries/<key>/` with the files of `entry_file` (the library,
/// its source and build log, and the manifest: the library's size and SHA-256, how it was
/// built, for what ops), or (in `CacheReport::headers`) one precompiled header set,
/// `<root>/pch/<key>/`.
struct CacheEntry {
  std::string key;
  std::filesystem::path dir;
  std::filesystem::path library;
  /// `find`/`get_or_build`: always there. `list`: nothing when `manifest_problem` says why
  /// (damaged, or written in another format: then it is rebuilt, never loaded).
  std::optional<ModuleManifest> manifest;
  ManifestProblem manifest_problem;
  std::uintmax_t size = 0;     ///< bytes on disk, all files of the entry
  std::int64_t last_used = 0;  ///< seconds since the epoch (the entry directory's mtime)
  /// `find`/`get_or_build`: `module.so` opened read-only, the bytes that were verified. Load
  /// it through this descriptor (`/proc/self/fd/N`), never by path.
  FileHandle library_file;
};

/// What a cache directory holds now.
struct CacheReport {
  std::vector<CacheEntry> entries;
  /// Precompiled headers (one-time setup), in `pch/`; they have no manifest.
  std::vector<CacheEntry> headers;
  std::uintmax_t total_size = 0;  ///< entries and headers
};

/// Why a module built from `headers` is out of date: the first of them whose bytes changed
/// since, or that is gone; empty when none did. Reads the user's files (never waiting on a
/// FIFO), not the cache.
std::string changed_header(std::vector<SourceFileHash> const& headers);

class ModuleCache {
 public:
  /// `LIBSECTION_CACHE_DIR`, else `$XDG_CACHE_HOME/libsection`, else `~/.cache/libsection`.
  static std::filesystem::path default_root();
  /// `LIBSECTION_CACHE_MAX_BYTES`: a plain integer with an optional K, M or G suffix (powers
  /// of 1024), else 1 GiB. Throws `CacheError` naming the variable for anything else.
  static std::uintmax_t default_max_bytes();
  /// Parses a size as `default_max_bytes` does; `what` names its origin in the error.
  static std::uintmax_t parse_size(std::string const& text, std::string const& what);
  /// `LIBSECTION_LOCK_TIMEOUT`: seconds to wait for another process's lock (default 300).
  static double default_lock_timeout();

  /// Opens the cache, creating what is missing (mode 0700), and reads the size cap and lock
  /// timeout from the environment. Throws `CacheError` when a directory is not trustworthy or
  /// a setting is malformed, before anything is built.
  explicit ModuleCache(std::filesystem::path const& root = default_root());
  /// The cache at `root` if that directory exists; creates nothing when it does not.
  static std::optional<ModuleCache> open_existing(std::filesystem::path const& root);

  std::filesystem::path const& root() const { return root_.path(); }
  /// What is remembered across processes (the compiler's identity).
  PrivateDir const& state() const { return state_; }
  /// Failed builds' source, command and log, one directory per key.
  PrivateDir const& failed() const { return failed_; }
  /// Precompiled headers, one directory per compiler, flags and Python.
  PrivateDir const& headers() const { return pch_; }
  std::uintmax_t max_bytes() const { return max_bytes_; }

  /// A lock in `locks/` with this cache's timeout.
  FileLock lock(std::string const& name, FileLock::Mode mode, bool give_up_when_busy = false) const;
  /// A fresh directory in `tmp/` for a build; `publish` renames it into place.
  WorkDir make_work_dir(std::string const& stem) const;
  /// Renames `work` to `<into>/<name>`, replacing what is there.
  void publish(WorkDir& work, PrivateDir const& into, std::string const& name) const;
  /// Removes a work directory that is not to be published.
  void discard(WorkDir& work) const;

  /// A verified entry, or nothing. A corrupt entry (library missing, a symbolic link, wrong
  /// mode, size or hash, bad manifest) is removed under its lock; one whose manifest is in
  /// another format, or one built from a header (`ModuleManifest::headers`) that has changed
  /// since, is a miss, left for `get_or_build` to replace. Throws `CacheError` for an
  /// entry owned by another user.
  std::optional<CacheEntry> find(std::string const& key);

  /// Builds with `build(work_dir)` under the key's lock unless another process published the
  /// entry first. `build` writes `module.so` (and anything else) into `work_dir` and returns
  /// the manifest of how it was built; the cache adds the key, the library's size and SHA-256
  /// and the time, and the directory is then renamed into place. `built` tells whether this
  /// call compiled. Then it collects garbage (`gc` to `max_bytes`), unless `collect` is false
  /// (a caller adding several entries at once collects once, after the last).
  using Builder = std::function<ModuleManifest(PrivateDir const& work_dir)>;
  CacheEntry get_or_build(std::string const& key, Builder const& build, bool* built = nullptr,
                          bool collect = true);

  CacheReport list() const;
  /// Removes least recently used entries and precompiled headers until the total is at most
  /// `max_bytes`, and the leftovers of killed builds. What is in use is skipped. Returns the
  /// keys it removed.
  std::vector<std::string> gc(std::uintmax_t max_bytes);
  /// Removes every entry, precompiled header, failed build and leftover; what is in use by
  /// another process (being built, checked or compiled with) is left alone, and returned.
  std::vector<std::string> clear();

 private:
  ModuleCache(std::filesystem::path const& root, bool create);
  struct Verified;
  /// The entry of `key` checked; with `headers`, also whether the headers it was built from
  /// are as they were (not right after its build, which saw them as they are).
  Verified verified(std::string const& key, bool headers = true);
  /// `list`, its manifests read only when `read_manifests` (`gc` needs sizes and times).
  CacheReport scan(bool read_manifests) const;
  void remove_entry(PrivateDir const& parent, std::string const& name) const;
  void reclaim_leftovers() const;

  PrivateDir root_, entries_, locks_, tmp_, failed_, state_, pch_;
  std::uintmax_t max_bytes_ = 0;
  double lock_timeout_ = 0;
};

}  // namespace section
