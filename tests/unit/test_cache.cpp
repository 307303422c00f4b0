// Unit tests of the cache room: building once, verifying, collecting; its trust model and
// upkeep (locks, refused directories, damaged entries, leftovers, the one-time setup).
#include <doctest/doctest.h>

#include "linker_test.hpp"

using namespace linker_test;

TEST_SUITE("linker") {
  TEST_CASE("the cache builds once, verifies, and rebuilds a corrupt entry") {
    TempDir dir;
    ModuleCache cache(dir.path);
    CHECK(mode_of(dir.path) == 0700);
    CHECK(mode_of(dir.path / "entries") == 0700);
    std::string const key(64, 'a');
    int builds = 0;
    auto builder = [&](PrivateDir const& work) {
      ++builds;
      return write_library(work, "library bytes");
    };
    bool built = false;
    auto entry = cache.get_or_build(key, builder, &built);
    CHECK(built);
    CHECK(mode_of(entry.dir) == 0700);
    cache.get_or_build(key, builder, &built);
    CHECK_FALSE(built);
    CHECK(builds == 1);
    REQUIRE(cache.find(key));

    std::ofstream(entry.library, std::ios::binary) << "library bytez";  // same size, other hash
    CHECK_FALSE(cache.find(key));
    CHECK_FALSE(fs::exists(entry.dir));
    cache.get_or_build(key, builder, &built);
    CHECK(built);
    CHECK(builds == 2);
  }

  TEST_CASE("a failed build publishes nothing and leaves no temporary directory") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const key(64, 'b');
    CHECK_THROWS_AS(
        cache.get_or_build(
            key, [](PrivateDir const&) -> ModuleManifest { throw LinkError("compiler exploded"); }),
        LinkError);
    CHECK_FALSE(cache.find(key));
    CHECK(fs::is_empty(dir.path / "tmp"));
  }

  TEST_CASE("concurrent builders of one key build it once") {
    TempDir dir;
    std::string const key(64, 'c');
    std::atomic<int> builds{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 6; ++i)
      threads.emplace_back([&] {
        ModuleCache cache(dir.path);
        cache.get_or_build(key, [&](PrivateDir const& work) {
          ++builds;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          return write_library(work, "shared");
        });
      });
    for (auto& t : threads) t.join();
    CHECK(builds == 1);
  }

  TEST_CASE("gc evicts least recently used entries down to the cap") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const old_key(64, 'd'), new_key(64, 'e');
    cache.get_or_build(
        old_key, [](PrivateDir const& w) { return write_library(w, std::string(4000, 'x')); });
    cache.get_or_build(
        new_key, [](PrivateDir const& w) { return write_library(w, std::string(4000, 'y')); });
    struct timespec times[2] = {{1000, 0}, {1000, 0}};  // make `old_key` clearly older
    ::utimensat(AT_FDCWD, (dir.path / "entries" / old_key).c_str(), times, 0);
    auto const total = cache.list().total_size;
    auto const removed = cache.gc(total - 1);
    CHECK(removed == std::vector<std::string>{old_key});
    CHECK(cache.find(new_key));
    CHECK(cache.gc(0).size() == 1);
    CHECK(cache.list().entries.empty());
  }

  TEST_CASE("the cache refuses a root writable by others that it does not own") {
    if (::geteuid() != 0) return;  // needs root to hand the directory to another user
    TempDir dir;
    fs::create_directories(dir.path);
    REQUIRE(::chown(dir.path.c_str(), 4242, 4242) == 0);
    ::chmod(dir.path.c_str(), 0777);
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path}, doctest::Contains("owned by uid 4242"), CacheError);
  }

  TEST_CASE(
      "the size cap is a plain integer with K, M or G, rejected otherwise naming the variable") {
    CHECK(ModuleCache::parse_size("16", "X") == 16);
    CHECK(ModuleCache::parse_size("0", "X") == 0);
    CHECK(ModuleCache::parse_size("10K", "X") == 10240);
    CHECK(ModuleCache::parse_size("500M", "X") == 500ull << 20);
    CHECK(ModuleCache::parse_size("2g", "X") == 2ull << 30);
    for (char const* bad : {"inf", "1e30", "nan", "garbage", "-1", "5MB", "0x10", "1.5G", " 16",
                            "16 ", "", "99999999999999999999", "99999999999999999G"}) {
      CAPTURE(bad);
      ::setenv("LIBSECTION_CACHE_MAX_BYTES", bad, 1);
      if (!*bad) {
        CHECK(ModuleCache::default_max_bytes() == (1ull << 30));  // unset or empty: the default
        continue;
      }
      CHECK(contains(cache_error_of([] { ModuleCache::default_max_bytes(); }),
                     "LIBSECTION_CACHE_MAX_BYTES=`" + std::string(bad) + "`"));
    }
    // Rejected before anything exists on disk.
    TempDir dir;
    ::setenv("LIBSECTION_CACHE_MAX_BYTES", "5MB", 1);
    CHECK_THROWS_AS(ModuleCache{dir.path}, CacheError);
    CHECK_FALSE(fs::exists(dir.path));
    ::setenv("LIBSECTION_LOCK_TIMEOUT", "soon", 1);
    ::unsetenv("LIBSECTION_CACHE_MAX_BYTES");
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path}, doctest::Contains("LIBSECTION_LOCK_TIMEOUT=`soon`"),
                         CacheError);
    ::unsetenv("LIBSECTION_LOCK_TIMEOUT");
  }

  TEST_CASE("a lock file that is a symbolic link is never followed") {
    TempDir dir;
    ModuleCache cache(dir.path / "cache");
    fs::create_directories(dir.path / "elsewhere");
    fs::path const target = dir.path / "elsewhere" / "created-by-us";
    std::string const key = entry_key('f');
    fs::create_symlink(target, dir.path / "cache" / "locks" / (key + ".lock"));
    cache.get_or_build(key, [](PrivateDir const& w) { return write_library(w, "bytes"); });
    CHECK_FALSE(fs::exists(target));
    CHECK_FALSE(fs::is_symlink(dir.path / "cache" / "locks" / (key + ".lock")));
  }

  TEST_CASE(
      "a busy lock times out naming its holder's pid, and a dead holder's lock is taken over") {
    TempDir dir;
    PrivateDir const locks = PrivateDir::open(dir.path, true);
    FileLock held(locks, "k.lock", FileLock::Mode::exclusive, 0);
    REQUIRE(held.held());
    CHECK(read_all(dir.path / "k.lock") == holder_record(::getpid()));
    auto const start = std::chrono::steady_clock::now();
    CHECK(
        contains(cache_error_of([&] { FileLock(locks, "k.lock", FileLock::Mode::exclusive, 0.3); }),
                 "held by pid " + std::to_string(::getpid()) + ", which is running"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    FileLock busy(locks, "k.lock", FileLock::Mode::exclusive, 10, true);
    CHECK_FALSE(busy.held());

    // The holder died, but its descriptor lives on (here: in this process, as in a leaked fd).
    int const leaked = ::open((dir.path / "dead.lock").c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(::flock(leaked, LOCK_EX) == 0);
    std::string const record = holder_record(dead_pid());
    REQUIRE(::write(leaked, record.data(), record.size()) == static_cast<ssize_t>(record.size()));
    FileLock taken(locks, "dead.lock", FileLock::Mode::exclusive, 10);
    CHECK(taken.held());
    CHECK(read_all(dir.path / "dead.lock") == holder_record(::getpid()));
    ::close(leaked);
  }

  TEST_CASE("the cache root may be the user's own symbolic link, never another user's") {
    TempDir dir;
    fs::create_directories(dir.path / "real");
    ::chmod((dir.path / "real").c_str(), 0755);
    fs::create_symlink(dir.path / "real", dir.path / "link");
    ModuleCache cache(dir.path / "link");
    CHECK(fs::exists(dir.path / "real" / "entries"));
    if (::geteuid() != 0) return;  // needs root to hand the link to another user
    fs::create_directories(dir.path / "victim");
    ::chmod((dir.path / "victim").c_str(), 0755);
    fs::create_symlink(dir.path / "victim", dir.path / "planted");
    REQUIRE(::lchown((dir.path / "planted").c_str(), 4242, 4242) == 0);
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path / "planted"},
                         doctest::Contains("is a symbolic link owned by uid 4242"), CacheError);
    CHECK(mode_of(dir.path / "victim") == 0755);  // not chmod'ed
    CHECK(fs::is_empty(dir.path / "victim"));
  }

  TEST_CASE("cache directories writable by others, symbolic links or another user's are refused "
            "with what to do") {
    TempDir dir;
    { ModuleCache cache(dir.path); }
    ::chmod((dir.path / "entries").c_str(), 0777);
    std::string const refused = cache_error_of([&] { ModuleCache{dir.path}; });
    CHECK(contains(refused, "writable by other users (mode 0777)"));
    CHECK(contains(refused, "chmod 700 " + (dir.path / "entries").string()));
    CHECK(mode_of(dir.path / "entries") == 0777);  // refused, not silently changed
    fs::remove(dir.path / "entries");
    fs::create_directories(dir.path / "elsewhere");
    fs::create_symlink(dir.path / "elsewhere", dir.path / "entries");
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path}, doctest::Contains("is a symbolic link"),
                         CacheError);
    fs::remove(dir.path / "entries");
    if (::geteuid() != 0) return;  // needs root to hand a directory to another user
    fs::create_directories(dir.path / "entries");
    REQUIRE(::chown((dir.path / "entries").c_str(), 4242, 4242) == 0);
    ::chmod((dir.path / "entries").c_str(), 0700);
    CHECK_THROWS_WITH_AS(ModuleCache{dir.path}, doctest::Contains("owned by uid 4242"), CacheError);
  }

  TEST_CASE("every kind of damaged entry is rebuilt, never stuck") {
    auto const damages = {"size-not-a-number", "sha-not-text",      "not-an-object",
                          "key-missing",       "entry-mode-0777",   "entry-symlink",
                          "library-symlink",   "library-truncated", "library-mode-0666",
                          "library-missing",   "manifest-directory"};
    for (std::string const damage : damages) {
      CAPTURE(damage);
      TempDir dir;
      ModuleCache cache(dir.path);
      std::string const key = entry_key('9');
      int builds = 0;
      auto builder = [&](PrivateDir const& w) {
        ++builds;
        return write_library(w, std::string(1000, 'L'));
      };
      auto const entry = cache.get_or_build(key, builder);
      fs::path const manifest = entry.dir / "manifest.json";
      auto edit_manifest = [&](std::string const& from, std::string const& to) {
        std::string text = read_all(manifest);
        auto const at = text.find(from);
        REQUIRE(at != std::string::npos);
        std::ofstream(manifest, std::ios::binary | std::ios::trunc)
            << text.replace(at, from.size(), to);
      };
      if (damage == "size-not-a-number") edit_manifest("\"size\": 1000", "\"size\": \"big\"");
      else if (damage == "sha-not-text")
        edit_manifest("\"sha256\": \"", "\"sha256\": 7, \"x\": \"");
      else if (damage == "not-an-object") std::ofstream(manifest, std::ios::trunc) << "[1, 2]";
      else if (damage == "key-missing") edit_manifest("\"key\"", "\"kee\"");
      else if (damage == "entry-mode-0777") ::chmod(entry.dir.c_str(), 0777);
      else if (damage == "entry-symlink") {
        fs::rename(entry.dir, dir.path / "moved");
        fs::create_symlink(dir.path / "moved", entry.dir);
      } else if (damage == "library-symlink") {
        fs::rename(entry.library, dir.path / "module.so");
        fs::create_symlink(dir.path / "module.so", entry.library);
      } else if (damage == "library-truncated") fs::resize_file(entry.library, 10);
      else if (damage == "library-mode-0666") ::chmod(entry.library.c_str(), 0666);
      else if (damage == "library-missing") fs::remove(entry.library);
      else if (damage == "manifest-directory") {
        fs::remove(manifest);
        fs::create_directories(manifest);
      }
      CHECK_FALSE(cache.find(key));
      bool built = false;
      auto const again = cache.get_or_build(key, builder, &built);
      CHECK(built);
      CHECK(builds == 2);
      CHECK(read_all(again.library) == std::string(1000, 'L'));
      CHECK(cache.find(key));
    }
  }

  TEST_CASE("a verified entry's descriptor keeps the verified bytes when the entry is swapped") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const key = entry_key('7');
    cache.get_or_build(key, [](PrivateDir const& w) { return write_library(w, "genuine module"); });
    auto const entry = cache.find(key);
    REQUIRE(entry);
    REQUIRE(entry->library_file);
    // Between verification and loading, the entry is replaced by a planted one.
    fs::rename(entry->dir, dir.path / "genuine");
    fs::create_directories(entry->dir);
    std::ofstream(entry->library, std::ios::binary) << "planted module";
    fs::path const by_fd = "/proc/self/fd/" + std::to_string(entry->library_file.get());
    CHECK(read_all(by_fd) == "genuine module");  // what dlopen(by_fd) maps
    CHECK(read_all(entry->library) == "planted module");
  }

  TEST_CASE("leftovers of killed builds are reclaimed, running builds are not") {
    TempDir dir;
    ModuleCache cache(dir.path);
    WorkDir running = cache.make_work_dir("running");
    fs::create_directories(dir.path / "tmp" / "killed.1.2.3");
    std::ofstream(dir.path / "tmp" / "killed.1.2.3" / ".in-use") << holder_record(dead_pid());
    std::ofstream(dir.path / "tmp" / "killed.1.2.3" / "probe.o") << "half written";
    fs::create_directories(dir.path / "tmp" / "young.1.2.3");
    fs::create_directories(dir.path / "tmp" / "removing.1.2.3");
    fs::create_directories(dir.path / "state" / "pch-0123");  // where older versions kept them
    struct timespec old[2] = {{1000, 0}, {1000, 0}};
    for (char const* name : {"killed.1.2.3", "removing.1.2.3"})
      ::utimensat(AT_FDCWD, (dir.path / "tmp" / name).c_str(), old, 0);
    ::utimensat(AT_FDCWD, running.dir.path().c_str(), old, 0);
    cache.gc(1ull << 40);
    CHECK_FALSE(fs::exists(dir.path / "tmp" / "killed.1.2.3"));
    CHECK_FALSE(fs::exists(dir.path / "tmp" / "removing.1.2.3"));
    CHECK_FALSE(fs::exists(dir.path / "state" / "pch-0123"));
    CHECK(fs::exists(running.dir.path()));
    CHECK(fs::exists(dir.path / "tmp" / "young.1.2.3"));  // its builder may not have locked it yet
  }

  TEST_CASE("the one-time setup costs one compile: the header's, no timing probes") {
    TempDir dir;
    fs::create_directories(dir.path / "bin");
    fs::path const gcc = dir.path / "bin" / "counting-g++";
    // Logs each run; a header compile writes the .gch it was asked for.
    std::ofstream(gcc) << "#!/bin/sh\necho run >> " << (dir.path / "runs").string() << "\n"
                       << "for a; do out=\"$a\"; done\n"
                       << "case \"$*\" in *c++-header*) : > \"$out\";; esac\nexit 0\n";
    fs::permissions(gcc, fs::perms::owner_all);
    ModuleCache cache(dir.path / "cache");
    Toolchain const tc{{}, {gcc.string()}, gcc.string() + ": g++ (counting) 12", {}};
    PythonEnvironment const py{{}, "abi", "numpy"};
    auto const pch = precompiled_header(tc, py, cache);
    REQUIRE(pch);
    CHECK(read_all(dir.path / "runs") == "run\n");
    CHECK(precompiled_header(tc, py, cache));  // decided once: nothing runs again
    CHECK(read_all(dir.path / "runs") == "run\n");
  }

  TEST_CASE(
      "the one-time setup remembers real verdicts, not passing failures, inside the size cap") {
    TempDir dir;
    fs::path const gcc = fake_gcc(dir.path / "bin");
    ModuleCache cache(dir.path / "cache");
    Toolchain const tc{{}, {gcc.string()}, gcc.string() + ": g++ (fake) 12", {}};
    PythonEnvironment const py{{}, "abi", "numpy"};
    for (char const* passing : {"enospc", "signal"}) {
      CAPTURE(passing);
      ::setenv("FAKE_PCH", passing, 1);
      CHECK_FALSE(precompiled_header(tc, py, cache));
      CHECK(cache.list().headers.empty());  // no verdict: the next build tries again
      CHECK(fs::is_empty(dir.path / "cache" / "tmp"));
    }
    ::setenv("FAKE_PCH", "error", 1);
    CHECK_FALSE(precompiled_header(tc, py, cache));
    auto const report = cache.list();
    REQUIRE(report.headers.size() == 1);
    CHECK(read_all(report.headers[0].dir / "verdict") == "skip");
    CHECK(report.total_size >= report.headers[0].size);
    ::unsetenv("FAKE_PCH");
    CHECK_FALSE(precompiled_header(tc, py, cache));  // decided: no second setup
    CHECK(cache.gc(0) == std::vector<std::string>{report.headers[0].key});
    CHECK(cache.list().headers.empty());
    ::setenv("FAKE_PCH", "error", 1);
    precompiled_header(tc, py, cache);
    ::unsetenv("FAKE_PCH");
    REQUIRE(cache.list().headers.size() == 1);
    cache.clear();
    CHECK(cache.list().headers.empty());
  }

  TEST_CASE("the core's notices go to the log sink with their levels, not to stderr") {
    TempDir dir;
    fs::path const gcc = fake_gcc(dir.path / "bin");
    ModuleCache cache(dir.path / "cache");
    Toolchain const tc{{}, {gcc.string()}, gcc.string() + ": g++ (fake) 12", {}};
    PythonEnvironment const py{{}, "abi", "numpy"};
    std::vector<LogRecord> records;
    set_log_sink([&](LogRecord const& r) { records.push_back(r); });
    ::setenv("FAKE_PCH", "enospc", 1);
    CHECK_FALSE(precompiled_header(tc, py, cache));
    ::unsetenv("FAKE_PCH");
    set_log_sink({});
    REQUIRE(records.size() == 2);
    CHECK(records[0].level == LogLevel::info);
    CHECK(records[0].message == "one-time setup: precompiling the Python and NumPy headers");
    CHECK(records[1].level == LogLevel::warning);
    CHECK(
        contains(records[1].message, "one-time setup failed (fatal error: cannot write PCH file"));
  }

  TEST_CASE("clear leaves what another process is using and says so, instead of waiting") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const busy = entry_key('b'), idle = entry_key('i');
    for (auto const& key : {busy, idle})
      cache.get_or_build(key, [](PrivateDir const& w) { return write_library(w, "x"); });
    ::setenv("LIBSECTION_LOCK_TIMEOUT", "600", 1);
    ModuleCache patient(dir.path);
    ::unsetenv("LIBSECTION_LOCK_TIMEOUT");
    FileLock held = cache.lock(busy + ".lock", FileLock::Mode::exclusive);
    auto const start = std::chrono::steady_clock::now();
    CHECK(patient.clear() == std::vector<std::string>{busy});
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    CHECK(fs::exists(dir.path / "entries" / busy));
    CHECK_FALSE(fs::exists(dir.path / "entries" / idle));
  }

  TEST_CASE("opening an existing cache never creates one") {
    TempDir dir;
    CHECK_FALSE(ModuleCache::open_existing(dir.path / "x"));
    CHECK_FALSE(fs::exists(dir.path));
    ModuleCache created(dir.path);
    CHECK(ModuleCache::open_existing(dir.path));
  }
}
