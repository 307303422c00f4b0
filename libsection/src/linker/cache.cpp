// The module cache. Layout under the root (every directory 0700):
//   entries/<key>/   module.so, source.cpp, build.log, manifest.json (published by rename)
//   locks/<key>.lock one flock per key; builds of different keys never wait for each other
//   tmp/             builds in progress; a killed build leaves its directory here, never in entries
//   failed/<key>/    source, command and log of the last failed build of a key
//   state/           what is remembered across processes (the compiler's identity)
#include "section/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "expand/sha256.hpp"
#include "linker/files.hpp"
#include "section/module.hpp"

namespace section {
namespace fs = std::filesystem;

// ---- file helpers --------------------------------------------------------------------------

std::optional<std::string> read_file(fs::path const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return data;
}

fs::path unique_temp_path(fs::path const& dir, std::string const& stem) {
  static std::atomic<unsigned> counter{0};
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return dir / (stem + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." +
                std::to_string(rng() % 1000000007ULL));
}

void write_file_atomic(fs::path const& path, std::string const& data) {
  fs::path const tmp = unique_temp_path(path.parent_path(), "." + path.filename().string());
  int const fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw LinkError("cannot write " + tmp.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t const n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int const err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw LinkError("cannot write " + tmp.string() + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int const err = errno;
    ::unlink(tmp.c_str());
    throw LinkError("cannot rename " + tmp.string() + " to " + path.string() + ": " +
                    std::strerror(err));
  }
}

FileLock::FileLock(fs::path const& path, bool wait) {
  while (true) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) throw LinkError("cannot open the lock " + path.string() + ": " + std::strerror(errno));
    int rc;
    while ((rc = ::flock(fd_, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      int const err = errno;
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK) return;  // busy: held() is false
      throw LinkError("cannot lock " + path.string() + ": " + std::strerror(err));
    }
    // `gc` may unlink a lock file while we wait for it: make sure we hold the current one.
    struct stat held{}, current{};
    if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &current) == 0 &&
        held.st_ino == current.st_ino && held.st_dev == current.st_dev)
      return;
    ::close(fd_);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string file_sha256(fs::path const& path) {
  auto data = read_file(path);
  if (!data) throw LinkError("cannot read " + path.string());
  return detail::sha256_hex(*data);
}

namespace {

void make_private_dir(fs::path const& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw LinkError("cannot create the cache directory " + dir.string() + ": " +
                    std::strerror(errno));
}

// Refuses anything another user could have planted or can modify.
void check_owned(fs::path const& path, struct stat const& st) {
  if (st.st_uid != ::geteuid())
    throw LinkError("refusing to use " + path.string() + ": it is owned by uid " +
                    std::to_string(st.st_uid) + ", not by the current user (uid " +
                    std::to_string(::geteuid()) + ")");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw LinkError("refusing to use " + path.string() +
                    ": it is writable by other users (expected mode 0700)");
}

std::uintmax_t tree_size(fs::path const& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

std::int64_t mtime_of(fs::path const& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_mtim.tv_sec) : 0;
}

// Moves a directory out of sight first, so no reader ever sees it half-deleted.
void remove_dir(fs::path const& dir, fs::path const& tmp_dir) {
  fs::path const doomed = unique_temp_path(tmp_dir, "removing");
  std::error_code ec;
  if (::rename(dir.c_str(), doomed.c_str()) == 0)
    fs::remove_all(doomed, ec);
  else
    fs::remove_all(dir, ec);
}

bool valid_key(std::string const& key) {
  return !key.empty() && key.size() <= 128 &&
         std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
         });
}

}  // namespace

// ---- the cache -----------------------------------------------------------------------------

fs::path ModuleCache::default_root() {
  if (char const* dir = std::getenv("LIBSECTION_CACHE_DIR"); dir && *dir) return dir;
  if (char const* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "libsection";
  if (char const* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "libsection";
  throw LinkError("no cache directory: set LIBSECTION_CACHE_DIR or HOME");
}

std::uintmax_t ModuleCache::default_max_bytes() {
  char const* text = std::getenv("LIBSECTION_CACHE_MAX_BYTES");
  if (!text || !*text) return std::uintmax_t{1} << 30;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  std::string const suffix = end ? end : "";
  double scale = 1;
  if (suffix == "K" || suffix == "k") scale = 1024;
  else if (suffix == "M") scale = 1024.0 * 1024;
  else if (suffix == "G") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty() || end == text || value < 0)
    throw LinkError("LIBSECTION_CACHE_MAX_BYTES=`" + std::string(text) +
                    "` is not a size (e.g. 500M, 2G, 1048576)");
  return static_cast<std::uintmax_t>(value * scale);
}

ModuleCache::ModuleCache(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  if (!fs::exists(root_, ec)) {
    fs::create_directories(root_.parent_path(), ec);
    make_private_dir(root_);
  }
  struct stat st{};
  if (::stat(root_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw LinkError("the cache directory " + root_.string() + " is not a directory");
  if (st.st_uid == ::geteuid() && (st.st_mode & 077)) ::chmod(root_.c_str(), 0700);
  else check_owned(root_, st);
  for (char const* sub : {"entries", "locks", "tmp", "failed", "state"}) make_private_dir(root_ / sub);
}

std::optional<CacheEntry> ModuleCache::verified(std::string const& key) {
  fs::path const dir = root_ / "entries" / key;
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0) return std::nullopt;
  check_owned(dir, st);
  CacheEntry entry{key, dir, dir / "module.so", {}, 0, 0};
  auto manifest_text = read_file(dir / "manifest.json");
  if (!manifest_text) return std::nullopt;
  auto const manifest = nlohmann::json::parse(*manifest_text, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("sha256") || !manifest.contains("size") ||
      manifest.value("key", "") != key)
    return std::nullopt;
  struct stat lib{};
  if (::lstat(entry.library.c_str(), &lib) != 0 || !S_ISREG(lib.st_mode)) return std::nullopt;
  check_owned(entry.library, lib);
  if (static_cast<std::uintmax_t>(lib.st_size) != manifest["size"].get<std::uintmax_t>())
    return std::nullopt;
  if (file_sha256(entry.library) != manifest["sha256"].get<std::string>()) return std::nullopt;
  entry.manifest = std::move(*manifest_text);
  entry.size = tree_size(dir);
  ::utimensat(AT_FDCWD, dir.c_str(), nullptr, 0);  // marks it recently used, for gc
  entry.last_used = mtime_of(dir);
  return entry;
}

std::optional<CacheEntry> ModuleCache::find(std::string const& key) {
  if (!valid_key(key)) throw LinkError("invalid cache key `" + key + "`");
  if (auto entry = verified(key)) return entry;
  fs::path const dir = root_ / "entries" / key;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return std::nullopt;
  // Present but not valid: re-check under the lock (a publisher may be mid-rename), then drop it.
  FileLock lock(root_ / "locks" / (key + ".lock"), true);
  if (auto entry = verified(key)) return entry;
  if (fs::exists(dir, ec)) {
    std::fprintf(stderr, "libsection: cache entry %s is corrupt; removing it\n", dir.c_str());
    remove_dir(dir, root_ / "tmp");
  }
  return std::nullopt;
}

CacheEntry ModuleCache::get_or_build(std::string const& key, Builder const& build, bool* built) {
  if (built) *built = false;
  if (auto entry = find(key)) return *entry;

  FileLock lock(root_ / "locks" / (key + ".lock"), true);
  // Another process may have built it while we waited for the lock.
  if (auto entry = verified(key)) return *entry;
  fs::path const dir = root_ / "entries" / key;
  std::error_code ec;
  if (fs::exists(dir, ec)) remove_dir(dir, root_ / "tmp");

  fs::path const work = unique_temp_path(root_ / "tmp", key.substr(0, 16));
  make_private_dir(work);
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(build(work));
    fs::path const library = work / "module.so";
    struct stat lib{};
    if (::stat(library.c_str(), &lib) != 0)
      throw LinkError("the build of cache entry " + key + " produced no module.so");
    manifest["key"] = key;
    manifest["size"] = static_cast<std::uintmax_t>(lib.st_size);
    manifest["sha256"] = file_sha256(library);
    manifest["created"] = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
    write_file_atomic(work / "manifest.json", manifest.dump(2) + "\n");
  } catch (...) {
    fs::remove_all(work, ec);
    throw;
  }
  if (::rename(work.c_str(), dir.c_str()) != 0) {
    int const err = errno;
    fs::remove_all(work, ec);
    throw LinkError("cannot publish cache entry " + dir.string() + ": " + std::strerror(err));
  }
  if (built) *built = true;
  auto entry = verified(key);
  if (!entry) throw LinkError("cache entry " + dir.string() + " failed verification right after publishing");
  gc(default_max_bytes());
  return *entry;
}

CacheReport ModuleCache::list() const {
  CacheReport report;
  std::error_code ec;
  for (auto const& item : fs::directory_iterator(root_ / "entries", ec)) {
    CacheEntry entry;
    entry.key = item.path().filename().string();
    entry.dir = item.path();
    entry.library = item.path() / "module.so";
    entry.manifest = read_file(item.path() / "manifest.json").value_or("");
    entry.size = tree_size(item.path());
    entry.last_used = mtime_of(item.path());
    report.total_size += entry.size;
    report.entries.push_back(std::move(entry));
  }
  std::sort(report.entries.begin(), report.entries.end(),
            [](auto const& a, auto const& b) { return a.last_used > b.last_used; });
  return report;
}

std::vector<std::string> ModuleCache::gc(std::uintmax_t max_bytes) {
  std::vector<std::string> removed;
  std::error_code ec;
  // Builds killed half-way leave their directory in tmp/; an hour is far longer than any build.
  auto const now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  for (auto const& item : fs::directory_iterator(root_ / "tmp", ec))
    if (now - mtime_of(item.path()) > 3600) fs::remove_all(item.path(), ec);

  CacheReport report = list();
  if (report.total_size <= max_bytes) return removed;
  for (auto it = report.entries.rbegin(); it != report.entries.rend(); ++it) {
    if (report.total_size <= max_bytes) break;
    fs::path const lock_path = root_ / "locks" / (it->key + ".lock");
    FileLock lock(lock_path, false);
    if (!lock.held()) continue;  // being built or checked right now
    remove_dir(it->dir, root_ / "tmp");
    ::unlink(lock_path.c_str());
    report.total_size -= std::min(report.total_size, it->size);
    removed.push_back(it->key);
  }
  return removed;
}

void ModuleCache::clear() {
  std::error_code ec;
  for (auto const& item : fs::directory_iterator(root_ / "entries", ec)) {
    fs::path const lock_path = root_ / "locks" / (item.path().filename().string() + ".lock");
    FileLock lock(lock_path, true);
    remove_dir(item.path(), root_ / "tmp");
    ::unlink(lock_path.c_str());
  }
  for (char const* sub : {"failed", "tmp"})
    for (auto const& item : fs::directory_iterator(root_ / sub, ec)) fs::remove_all(item.path(), ec);
}

}  // namespace section
