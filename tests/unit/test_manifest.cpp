// Unit tests of the entry's format: the manifest, and the versions in every key.
#include <doctest/doctest.h>

#include "linker/cache/files.hpp"
#include "linker_test.hpp"

using namespace linker_test;

namespace {

ModuleManifest full_manifest() {
  ModuleManifest m;
  m.module = "m0123";
  m.ops = {"Add", "Mul"};
  m.inputs = {"float64[:]", "float64[:]"};
  m.outputs = {"float64[:]"};
  m.libsection_version = "1.2.3";
  m.compiler = "/usr/bin/c++: g++ 12";
  m.compile_command = "c++ -O3 -c -x c++ 'a b/source.cpp' -o module.o";
  m.link_command = "c++ -shared -o module.so module.o";
  m.python_abi = "cpython-312-x86_64-linux-gnu";
  m.numpy = "numpy 2.1 C-API 19";
  m.build_seconds = 1.25;
  m.graph = 2;
  m.graphs = 3;
  m.library_key = entry_key('b');
  m.key = entry_key('a');
  m.size = 1000;
  m.sha256 = std::string(64, 'f');
  m.created = 1700000000;
  m.headers = {{"/home/me/op/include/offset.h", std::string(64, 'e')},
               {"/home/me/op/edited while compiling.h", ""}};
  return m;
}

// `full_manifest()`'s JSON with `from` replaced by `to` (which must be there).
std::string edited_manifest(std::string const& from, std::string const& to) {
  std::string text = full_manifest().to_json();
  auto const at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_SUITE("linker") {
  TEST_CASE("a manifest reads back what it wrote, with its format number") {
    ModuleManifest const m = full_manifest();
    std::string const text = m.to_json();
    CHECK(contains(text, "\"format\": " + std::to_string(manifest_format) + ",\n"));
    CHECK(contains(text, "\"size\": 1000\n"));  // what the damage tests edit
    CHECK(text.back() == '\n');
    auto const read = ModuleManifest::parse(text);
    REQUIRE(read.manifest);
    CHECK(read.problem.kind == ManifestProblem::Kind::none);
    CHECK(read.manifest->to_json() == text);  // every field came back
    CHECK(read.manifest->format == manifest_format);
    CHECK(read.manifest->ops == m.ops);
    CHECK(read.manifest->compile_command == m.compile_command);
    CHECK(read.manifest->build_seconds == 1.25);
    CHECK(read.manifest->size == 1000);
    CHECK(read.manifest->created == 1700000000);
    CHECK(read.manifest->graph == 2);
    CHECK(read.manifest->graphs == 3);
    CHECK(read.manifest->library_key == entry_key('b'));
    REQUIRE(read.manifest->headers.size() == 2);
    CHECK(read.manifest->headers[0].path == "/home/me/op/include/offset.h");
    CHECK(read.manifest->headers[1].sha256.empty());
  }

  TEST_CASE("a damaged manifest is refused naming what is wrong, never thrown") {
    std::string const f = std::to_string(manifest_format);
    std::pair<std::string, std::string> const cases[] = {
        {"", "manifest.json is not a JSON object"},
        {"{\"format\": 1", "manifest.json is not a JSON object"},
        {"[1, 2]", "manifest.json is not a JSON object"},
        {edited_manifest("\"format\": " + f, "\"format\": \"one\""),
         "manifest.json has no format number"},
        {edited_manifest("\"format\": " + f, "\"format\": -1"),
         "manifest.json has no format number"},
        {edited_manifest("\"key\"", "\"kee\""), "manifest.json has no key text"},
        {edited_manifest("\"size\": 1000", "\"size\": \"big\""),
         "manifest.json has no size in bytes"},
        {edited_manifest("\"size\": 1000", "\"size\": -1000"),
         "manifest.json has no size in bytes"},
        {edited_manifest("\"sha256\": \"f", "\"sha256\": 7, \"x\": \"f"),
         "manifest.json has no sha256 text"},
        {edited_manifest("\"Add\"", "7"), "manifest.json has no ops list of text"},
        {edited_manifest("\"created\": 1700000000", "\"created\": 1.5"),
         "manifest.json has no created in seconds since the epoch"},
        {edited_manifest("\"build_seconds\": 1.25", "\"build_seconds\": null"),
         "manifest.json has no build_seconds in seconds"},
        {edited_manifest("\"graph\": 2", "\"graph\": -2"), "manifest.json has no graph count"},
        {edited_manifest("\"graphs\": 3", "\"graphs\": 2.5"), "manifest.json has no graphs count"},
        {edited_manifest("\"graph\": 2", "\"graph\": 3"), "manifest.json names graph 3 of 3"},
        {edited_manifest("\"graphs\": 3", "\"graphs\": 0"), "manifest.json names graph 2 of 0"},
        {edited_manifest("\"library_key\"", "\"library\""),
         "manifest.json has no library_key text"},
        {edited_manifest("\"headers\": [", "\"headers\": [7, "),
         "manifest.json has no headers list of files and their SHA-256"},
        {edited_manifest("\"path\": \"/home/me/op/include/offset.h\"", "\"path\": null"),
         "manifest.json has no headers list of files and their SHA-256"},
    };
    for (auto const& c : cases) {  // not a structured binding: clang 14 cannot capture one
      std::string const& text = c.first;
      CAPTURE(text);
      auto const read = ModuleManifest::parse(text);
      CHECK_FALSE(read.manifest);
      CHECK(read.problem.kind == ManifestProblem::Kind::damaged);
      CHECK(read.problem.message == c.second);
    }
  }

  TEST_CASE("a manifest in another format is refused as such, with its number") {
    std::string const f = std::to_string(manifest_format);
    auto const later = ModuleManifest::parse(edited_manifest("\"format\": " + f, "\"format\": 99"));
    CHECK_FALSE(later.manifest);
    CHECK(later.problem.kind == ManifestProblem::Kind::other_format);
    CHECK(later.problem.format == 99);
    CHECK(later.problem.message ==
          "manifest.json is in format 99; this libsection reads format " + f);
    // Before format numbers: a manifest without one, whatever else it holds.
    auto const older = ModuleManifest::parse(R"({"key": "abc", "size": 1, "sha256": "00"})");
    CHECK(older.problem.kind == ManifestProblem::Kind::other_format);
    CHECK(older.problem.format == 0);
    CHECK(contains(older.problem.message, "no format number"));
    // Another format's fields are not read: a field this format requires may be gone.
    auto const reshaped = ModuleManifest::parse(R"({"format": 1, "library": {"bytes": 5}})");
    CHECK(reshaped.problem.kind == ManifestProblem::Kind::other_format);
  }

  TEST_CASE("an entry whose manifest has another format is a miss and rebuilt, never an error") {
    TempDir dir;
    ModuleCache cache(dir.path);
    std::string const key = entry_key('5');
    int builds = 0;
    auto builder = [&](PrivateDir const& w) {
      ++builds;
      return write_library(w, "library bytes");
    };
    auto const entry = cache.get_or_build(key, builder);
    REQUIRE(entry.manifest);
    CHECK(entry.manifest->format == manifest_format);
    CHECK(entry.manifest->key == key);
    CHECK(entry.manifest->size == 13);
    fs::path const manifest = entry.dir / "manifest.json";
    std::string text = read_all(manifest);
    std::string const format = "\"format\": " + std::to_string(manifest_format);
    REQUIRE(contains(text, format));
    std::ofstream(manifest, std::ios::binary | std::ios::trunc)
        << text.replace(text.find(format), format.size(), "\"format\": 99");

    std::vector<LogRecord> records;
    set_log_sink([&](LogRecord const& r) { records.push_back(r); });
    CHECK_FALSE(cache.find(key));  // not loaded, and not an error
    auto const listed = cache.list();
    REQUIRE(listed.entries.size() == 1);
    CHECK_FALSE(listed.entries[0].manifest);
    CHECK(listed.entries[0].manifest_problem.kind == ManifestProblem::Kind::other_format);
    CHECK(listed.entries[0].manifest_problem.format == 99);
    bool built = false;
    auto const again = cache.get_or_build(key, builder, &built);
    set_log_sink({});
    CHECK(built);
    CHECK(builds == 2);
    REQUIRE(again.manifest);
    CHECK(again.manifest->format == manifest_format);
    CHECK(cache.find(key));
    for (auto const& r : records) {
      CAPTURE(r.message);
      CHECK(r.level != LogLevel::warning);  // a miss, not damage
    }
    REQUIRE(records.size() == 1);
    CHECK(contains(records[0].message, "was written in another format (manifest.json is in "
                                       "format 99"));
  }

  TEST_CASE("an entry built from a header that changed since is a miss and rebuilt") {
    TempDir dir;
    ModuleCache cache(dir.path / "cache");
    fs::path const header = dir.path / "offset.h";
    std::ofstream(header) << "#define OFFSET 1\n";
    std::string const key = entry_key('6');
    int builds = 0;
    auto builder = [&](PrivateDir const& w) {
      ++builds;
      ModuleManifest m = write_library(w, "library bytes");
      m.headers = {{header.string(), *file_sha256(header)}};
      return m;
    };
    cache.get_or_build(key, builder);
    CHECK(cache.find(key));  // as it was: a hit
    CHECK(changed_header(cache.find(key)->manifest->headers).empty());

    std::ofstream(header) << "#define OFFSET 2\n";
    std::vector<LogRecord> records;
    set_log_sink([&](LogRecord const& r) { records.push_back(r); });
    CHECK_FALSE(cache.find(key));  // a miss, left in place for the rebuild
    CHECK(fs::exists(dir.path / "cache" / "entries" / key));
    bool built = false;
    cache.get_or_build(key, builder, &built);
    CHECK(built);
    CHECK(builds == 2);
    CHECK(cache.find(key));
    fs::remove(header);  // gone: a miss too
    CHECK_FALSE(cache.find(key));
    set_log_sink({});
    for (auto const& r : records) {
      CAPTURE(r.message);
      CHECK(r.level != LogLevel::warning);  // not damage
    }
    REQUIRE_FALSE(records.empty());
    CHECK(contains(records[0].message, "is out of date (the header " + header.string() +
                                           " changed since it was built)"));
    // A FIFO in a header's place is not waited for.
    ::mkfifo(header.c_str(), 0600);
    CHECK(contains(changed_header({{header.string(), std::string(64, '0')}}), "is gone"));
  }

  TEST_CASE("the module ABI and the manifest format enter every cache key") {
    ModuleSource const m = generate_module(add_mul_graph());
    Toolchain const tc{{}, {"/usr/bin/c++"}, "/usr/bin/c++: g++ 12", {"-O3"}};
    PythonEnvironment const py{{"/inc"}, "cpython-311", "numpy 2 C-API 1"};
    CacheFormat const today{module_abi_version, manifest_format};
    CacheFormat const other_abi{module_abi_version + 1, manifest_format};
    CacheFormat const other_manifest{module_abi_version, manifest_format + 1};
    std::string const module_key = module_cache_key(m, tc, py);
    CHECK(module_cache_key(m, tc, py, today) == module_key);
    CHECK(module_cache_key(m, tc, py, other_abi) != module_key);
    CHECK(module_cache_key(m, tc, py, other_manifest) != module_key);
    std::string const header_key = precompiled_header_key(tc, py);
    CHECK(header_key.size() == 24);
    CHECK(precompiled_header_key(tc, py, today) == header_key);
    CHECK(precompiled_header_key(tc, py, other_abi) != header_key);
    CHECK(precompiled_header_key(tc, py, other_manifest) != header_key);
  }
}
