// The module cache. Layout under the root (every directory 0700 and owned by the user):
//   entries/<key>/     module.so, source.cpp, build.log, manifest.json (published by rename;
//                      the names are `entry_file`'s, the manifest is manifest.cpp's)
//   pch/<key>/         a precompiled prelude header and its verdict (the one-time setup)
//   locks/<name>.lock  one flock per key; the exclusive holder writes its pid into it
//   tmp/<work>/        builds in progress, each holding its `.in-use` file locked while alive
//   failed/<key>/      source, command and log of the last failed build of a key
//   state/             what is remembered across processes (the compiler's identity)
// Every file inside is opened with openat(…, O_NOFOLLOW) from these verified directories
// (private_dir.cpp); the locks are file_lock.cpp's.
#include "section/linker/cache/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/hash.hpp"
#include "linker/cache/files.hpp"
#include "linker/cache/private_dir_detail.hpp"
#include "section/linker/cache/error.hpp"
#include "section/log.hpp"

namespace section {
namespace fs = std::filesystem;

using detail::mode_text;
using detail::open_dir_at;
using detail::read_fd;
using detail::refuse;
using detail::uid_text;
using detail::untrusted_because;
using detail::writable_by_others;

namespace {

char const* const in_use_file = ".in-use";

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
    throw CacheError("refusing to use " + shown.string() + ": it is owned by " +
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

// A file with several names (the library the graphs of one module of several share, linked
// into each graph's entry) counts its share in each, so the total counts it once.
std::uintmax_t tree_size(fs::path const& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode))
      total += static_cast<std::uintmax_t>(st.st_size) / std::max<nlink_t>(st.st_nlink, 1);
  }
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

/// Every `LIBSECTION_*` setting, a bad one as a `CacheError` naming it. The cache reads them
/// all before it creates anything, so a typo fails before any side effect.
Settings cache_settings() { return read_settings_as<CacheError>(); }

}  // namespace

fs::path ModuleCache::default_root() {
  if (auto dir = cache_settings().cache_dir) return *dir;
  if (char const* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "libsection";
  if (char const* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "libsection";
  throw CacheError("no cache directory: set LIBSECTION_CACHE_DIR or HOME");
}

std::uintmax_t ModuleCache::parse_size(std::string const& text, std::string const& what) {
  try {
    return section::parse_size(text, what);
  } catch (SettingsError const& e) {
    throw CacheError(e.what());
  }
}

std::uintmax_t ModuleCache::default_max_bytes() { return cache_settings().cache_max_bytes; }

double ModuleCache::default_lock_timeout() { return cache_settings().lock_timeout; }

// ---- the cache -----------------------------------------------------------------------------

struct ModuleCache::Verified {
  std::optional<CacheEntry> entry;
  std::string problem;  // why the entry cannot be used; empty (and no entry): it does not exist
  bool other_format = false;  // only its manifest's format is another: a miss, not damage
  bool out_of_date = false;   // a header it was built from changed since: a miss, not damage
  /// Either kind of miss that is no damage: `get_or_build` replaces the entry.
  bool replaceable() const { return other_format || out_of_date; }
};

ModuleCache::ModuleCache(fs::path const& root) : ModuleCache(root, true) {}

ModuleCache::ModuleCache(fs::path const& root, bool create) {
  // The settings are read first, all at once: a typo fails before anything is created or built.
  Settings const settings = cache_settings();
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
    throw CacheError("cannot create " + (tmp_.path() / name).string() + ": " +
                     std::strerror(errno));
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
    throw CacheError("cannot publish " + (into.path() / name).string() + ": " + std::strerror(err));
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

/// Why the library (`fd`, of the size `st` gives) is not the one `manifest` describes; empty
/// when its size and SHA-256 match. The bytes hashed here are the bytes loaded: the caller
/// loads through this descriptor.
std::string library_problem(int fd, struct stat const& st, ModuleManifest const& manifest) {
  std::string const library = entry_file::library;
  if (static_cast<std::uintmax_t>(st.st_size) != manifest.size)
    return library + " is " + std::to_string(st.st_size) + " bytes, the manifest says " +
           std::to_string(manifest.size);
  auto const bytes = read_fd(fd, static_cast<std::size_t>(st.st_size));
  if (!bytes || bytes->size() != manifest.size) return library + " cannot be read whole";
  if (detail::sha256_hex(*bytes) != manifest.sha256)
    return library + " does not match the SHA-256 in the manifest";
  return {};
}

}  // namespace

std::string changed_header(std::vector<SourceFileHash> const& headers) {
  // Paths the compiler named, outside the cache: the user's own files.
  for (auto const& header : headers) {
    auto const now = file_sha256(header.path);
    if (!now) return "the header " + header.path + " it was built from is gone";
    if (header.sha256 != *now) return "the header " + header.path + " changed since it was built";
  }
  return {};
}

ModuleCache::Verified ModuleCache::verified(std::string const& key, bool headers) {
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
      open_entry_file(dir_fd, entry_file::manifest, dir_path / entry_file::manifest, st, problem);
  if (manifest_fd < 0) return {std::nullopt, problem};
  FileHandle manifest_file(manifest_fd);
  auto const manifest_text = read_fd(manifest_fd);
  if (!manifest_text) return {std::nullopt, std::string(entry_file::manifest) + " cannot be read"};
  auto reading = ModuleManifest::parse(*manifest_text);
  if (!reading.manifest)
    return {std::nullopt, reading.problem.message,
            reading.problem.kind == ManifestProblem::Kind::other_format};
  ModuleManifest& manifest = *reading.manifest;
  if (manifest.key != key)
    return {std::nullopt, std::string(entry_file::manifest) + " names another key"};

  int const library_fd =
      open_entry_file(dir_fd, entry_file::library, dir_path / entry_file::library, st, problem);
  if (library_fd < 0) return {std::nullopt, problem};
  FileHandle library(library_fd);
  if (problem = library_problem(library_fd, st, manifest); !problem.empty())
    return {std::nullopt, problem};
  if (headers)
    if (problem = changed_header(manifest.headers); !problem.empty())
      return {std::nullopt, problem, false, true};

  CacheEntry entry;
  entry.key = key;
  entry.dir = dir_path;
  entry.library = dir_path / entry_file::library;
  entry.manifest = std::move(manifest);
  entry.library_file = library;
  entry.size = tree_size(dir_path);
  ::futimens(dir_fd, nullptr);  // marks it recently used, for gc
  entry.last_used = ::fstat(dir_fd, &st) == 0 ? static_cast<std::int64_t>(st.st_mtim.tv_sec) : 0;
  return {std::move(entry), {}};
}

std::optional<CacheEntry> ModuleCache::find(std::string const& key) {
  if (!valid_key(key)) throw CacheError("invalid cache key `" + key + "`");
  auto found = verified(key);
  // Another format or a changed header is a miss, never loaded: `get_or_build` replaces it
  // under the key's lock.
  if (found.entry || found.problem.empty() || found.replaceable()) return std::move(found.entry);
  // Damaged: look again under the key's lock (a builder may be replacing it), then drop it.
  FileLock lock = this->lock(key + ".lock", FileLock::Mode::exclusive);
  found = verified(key);
  if (found.entry || found.problem.empty() || found.replaceable()) return std::move(found.entry);
  log_record(LogLevel::warning, "cache entry " + (entries_.path() / key).string() +
                                    " is corrupt (" + found.problem + "); removing it");
  remove_entry(entries_, key);
  return std::nullopt;
}

CacheEntry ModuleCache::get_or_build(std::string const& key, Builder const& build, bool* built,
                                     bool collect) {
  if (built) *built = false;
  if (auto entry = find(key)) return std::move(*entry);

  FileLock lock = this->lock(key + ".lock", FileLock::Mode::exclusive);
  // Another process may have built it while we waited for the lock.
  if (auto found = verified(key); found.entry) return std::move(*found.entry);
  else if (!found.problem.empty()) {
    if (found.other_format)
      log_record(LogLevel::info, "cache entry " + (entries_.path() / key).string() +
                                     " was written in another format (" + found.problem +
                                     "); rebuilding it");
    else if (found.out_of_date)
      log_record(LogLevel::info, "cache entry " + (entries_.path() / key).string() +
                                     " is out of date (" + found.problem + "); rebuilding it");
    remove_entry(entries_, key);
  }

  WorkDir work = make_work_dir(key.substr(0, 16));
  try {
    ModuleManifest manifest = build(work.dir);
    struct stat st {};
    std::string problem;
    int const library_fd = open_entry_file(work.dir.fd(), entry_file::library,
                                           work.dir.path() / entry_file::library, st, problem);
    if (library_fd < 0)
      throw CacheError("the build of cache entry " + key + " produced no usable " +
                       entry_file::library + ": " + problem);
    FileHandle library(library_fd);
    auto const bytes = read_fd(library_fd, static_cast<std::size_t>(st.st_size));
    if (!bytes) throw CacheError("cannot read " + (work.dir.path() / entry_file::library).string());
    manifest.format = manifest_format;  // the format this code writes, whatever the builder said
    manifest.key = key;
    if (manifest.library_key.empty()) manifest.library_key = key;
    manifest.size = static_cast<std::uintmax_t>(bytes->size());
    manifest.sha256 = detail::sha256_hex(*bytes);
    manifest.created = now_seconds();
    work.dir.write(entry_file::manifest, manifest.to_json());
    publish(work, entries_, key);
  } catch (...) {
    tmp_.remove(work.name);
    throw;
  }
  if (built) *built = true;
  auto found = verified(key, false);
  if (!found.entry)
    throw CacheError("cache entry " + (entries_.path() / key).string() +
                     " failed verification right after publishing: " + found.problem);
  if (collect) gc(max_bytes_);
  return std::move(*found.entry);
}

CacheReport ModuleCache::list() const { return scan(true); }

CacheReport ModuleCache::scan(bool read_manifests) const {
  CacheReport report;
  for (auto [dir, into] :
       {std::pair{&entries_, &report.entries}, std::pair{&pch_, &report.headers}}) {
    for (auto const& name : dir->names()) {
      CacheEntry entry;
      entry.key = name;
      entry.dir = dir->path() / name;
      entry.library = entry.dir / entry_file::library;
      entry.manifest_problem = {ManifestProblem::Kind::damaged, 0,
                                std::string(entry_file::manifest) + " cannot be read"};
      if (int const d = read_manifests ? open_dir_at(dir->fd(), name) : -1; d >= 0) {
        int const m =
            ::openat(d, entry_file::manifest, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (m >= 0) {
          auto reading = ModuleManifest::parse(read_fd(m).value_or(""));
          entry.manifest = std::move(reading.manifest);
          entry.manifest_problem = std::move(reading.problem);
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
  CacheReport const report = scan(false);  // sizes and times: no manifest is read
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
