// section-cache: list, explain, gc and clear libsection's compiled-module cache.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "section/linker/cache/cache.hpp"
#include "section/linker/cache/manifest.hpp"
#include "section/version.hpp"

namespace {

using section::CacheEntry;
using section::ManifestProblem;
using section::ModuleCache;
using section::ModuleManifest;

std::string human_size(std::uintmax_t bytes) {
  char buffer[32];
  if (bytes >= (1u << 20)) std::snprintf(buffer, sizeof buffer, "%.1f MiB", bytes / 1048576.0);
  else std::snprintf(buffer, sizeof buffer, "%.1f KiB", bytes / 1024.0);
  return buffer;
}

std::string age(std::int64_t when) {
  auto const now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  auto const s = now - when;
  if (s < 120) return std::to_string(s) + " s ago";
  if (s < 7200) return std::to_string(s / 60) + " min ago";
  if (s < 172800) return std::to_string(s / 3600) + " h ago";
  return std::to_string(s / 86400) + " days ago";
}

// "2026-11-22 21:40:07 UTC (3 min ago)" for a time in seconds since the epoch.
std::string when(std::int64_t seconds) {
  std::time_t const t = static_cast<std::time_t>(seconds);
  std::tm utc{};
  char text[32] = "?";
  if (::gmtime_r(&t, &utc)) std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return std::string(text) + " (" + age(seconds) + ")";
}

// "VectorTimesVector(float64[:], float64[:]) -> float64[:]" from an entry's manifest, or why
// it has none that this libsection uses.
std::string describe(CacheEntry const& e) {
  if (!e.manifest) {
    if (e.manifest_problem.kind == ManifestProblem::Kind::other_format)
      return "(not loaded: " + e.manifest_problem.message + ")";
    return "(no readable manifest: " + e.manifest_problem.message + ")";
  }
  auto join = [](std::vector<std::string> const& list) {
    std::string out;
    for (auto const& item : list) out += (out.empty() ? "" : ", ") + item;
    return out;
  };
  ModuleManifest const& m = *e.manifest;
  if (m.graphs > 1 && m.key == m.library_key)
    return "the library of " + std::to_string(m.graphs) +
           " graphs compiled together: " + join(m.ops);
  std::string const op = join(m.ops) + "(" + join(m.inputs) + ") -> " + join(m.outputs);
  if (m.graphs == 1) return op;
  return op + ", graph " + std::to_string(m.graph) + " of the library " +
         m.library_key.substr(0, 12);
}

// The manifest's fields but the op's, one a line, in the file's (sorted) order.
void print_fields(ModuleManifest const& m) {
  auto const field = [](char const* name, std::string const& value) {
    std::cout << "  " << name << ": " << value << "\n";
  };
  field("build_seconds", nlohmann::json(m.build_seconds).dump());
  field("compile_command", m.compile_command);
  field("compiler", m.compiler);
  field("created", when(m.created));
  field("format", std::to_string(m.format));
  field("graph", std::to_string(m.graph));
  field("graphs", std::to_string(m.graphs));
  field("key", m.key);
  field("libsection_version", m.libsection_version);
  field("library_key", m.library_key);
  field("link_command", m.link_command);
  field("module", m.module);
  field("numpy", m.numpy);
  field("python_abi", m.python_abi);
  field("sha256", m.sha256);
  field("size", std::to_string(m.size));
}

int list(ModuleCache const& cache, bool json) {
  auto const report = cache.list();
  if (json) {
    auto out = nlohmann::json::array();
    for (auto const& e : report.entries) {
      nlohmann::json record = {
          {"key", e.key},
          {"dir", e.dir.string()},
          {"size", e.size},
          {"last_used", e.last_used},
          {"manifest", e.manifest ? nlohmann::json::parse(e.manifest->to_json()) : nullptr}};
      if (!e.manifest) record["problem"] = e.manifest_problem.message;
      out.push_back(std::move(record));
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << report.entries.size() << " modules, " << human_size(report.total_size) << " in "
            << cache.root().string() << "\n";
  for (auto const& e : report.entries)
    std::cout << "  " << e.key.substr(0, 12) << "  " << human_size(e.size) << "  "
              << age(e.last_used) << "  " << describe(e) << "\n";
  for (auto const& e : report.headers)
    std::cout << "  " << e.key.substr(0, 12) << "  " << human_size(e.size) << "  "
              << age(e.last_used) << "  (precompiled Python and NumPy headers)\n";
  return 0;
}

int explain(ModuleCache& cache, std::string const& prefix) {
  std::vector<CacheEntry> matches;
  for (auto const& e : cache.list().entries)
    if (e.key.rfind(prefix, 0) == 0) matches.push_back(e);
  if (matches.empty()) {
    std::cerr << "section-cache: no cached module has a key starting with `" << prefix << "`\n";
    return 1;
  }
  if (matches.size() > 1) {
    std::cerr << "section-cache: `" << prefix << "` matches " << matches.size()
              << " modules; give more of the key\n";
    return 1;
  }
  auto const& e = matches.front();
  std::string status;
  if (e.manifest_problem.kind == ManifestProblem::Kind::other_format)
    status = "another format: " + e.manifest_problem.message +
             "; never loaded, and rebuilt when this libsection builds its module";
  else if (cache.find(e.key)) status = "verified (size and SHA-256 match the manifest)";
  else status = "corrupt: it was removed and will be rebuilt on next use";
  std::cout << "key:       " << e.key << "\n"
            << "directory: " << e.dir.string() << "\n"
            << "status:    " << status << "\n"
            << "op:        " << describe(e) << "\n";
  if (e.manifest) print_fields(*e.manifest);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lists, explains, garbage-collects and clears libsection's compiled-module cache.\n"
               "The cache is LIBSECTION_CACHE_DIR, else $XDG_CACHE_HOME/libsection, else "
               "~/.cache/libsection."};
  app.require_subcommand(1);
  std::string environment = "Environment (every build reads and checks these):\n";
  for (auto const& v : section::setting_variables())
    environment += "  " + std::string(v.name) + ": " + std::string(v.meaning) + "\n";
  app.footer(environment);
  std::string cache_dir;
  app.add_option("--cache-dir", cache_dir, "the cache directory (default: as described above)");

  bool json = false;
  auto* list_cmd = app.add_subcommand("list", "list cached modules, most recently used first");
  list_cmd->add_flag("--json", json, "print JSON records");

  std::string key;
  auto* explain_cmd = app.add_subcommand("explain", "show how a module was built and verify it");
  explain_cmd->add_option("key", key, "the module's key, or a unique prefix of it")->required();

  std::string max_size;
  auto* gc_cmd = app.add_subcommand(
      "gc", "remove least recently used modules above the size cap, and stale temporary builds");
  gc_cmd->add_option("--max-size", max_size,
                     "size cap, e.g. 500M (default: LIBSECTION_CACHE_MAX_BYTES, else 1G)");

  auto* clear_cmd = app.add_subcommand(
      "clear", "remove every module, precompiled header, failed build and leftover (what other "
               "processes are using is left alone)");

  app.set_version_flag("--version", std::string("section-cache ") + section::version);
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    int const code = app.exit(e);
    return e.get_exit_code() == 0 ? code : 2;
  }

  try {
    std::filesystem::path const root =
        cache_dir.empty() ? ModuleCache::default_root() : std::filesystem::path(cache_dir);
    std::uintmax_t const cap = max_size.empty() ? ModuleCache::default_max_bytes()
                                                : ModuleCache::parse_size(max_size, "--max-size");
    // Inspecting or trimming a cache never creates one.
    auto cache = ModuleCache::open_existing(root);
    if (!cache) {
      if (*explain_cmd) {
        std::cerr << "section-cache: there is no cache at " << root.string() << "\n";
        return 1;
      }
      if (*list_cmd && json) std::cout << "[]\n";
      else std::cout << "no cache at " << root.string() << " (nothing has been built there)\n";
      return 0;
    }
    if (*list_cmd) return list(*cache, json);
    if (*explain_cmd) return explain(*cache, key);
    if (*gc_cmd) {
      auto const removed = cache->gc(cap);
      std::cout << "removed " << removed.size() << " item" << (removed.size() == 1 ? "" : "s")
                << "; " << human_size(cache->list().total_size) << " left\n";
      return 0;
    }
    if (*clear_cmd) {
      auto const in_use = cache->clear();
      std::cout << "cleared " << cache->root().string();
      if (!in_use.empty())
        std::cout << " (" << in_use.size() << " item" << (in_use.size() == 1 ? "" : "s")
                  << " in use by another process left alone)";
      std::cout << "\n";
      return 0;
    }
  } catch (std::exception const& e) {
    std::cerr << "section-cache: " << e.what() << "\n";
    return 2;
  }
  return 2;
}
