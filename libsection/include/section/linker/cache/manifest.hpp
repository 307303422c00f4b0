// The on-disk format of a cache entry, in one place: the names of its files, and its manifest
// (what was built, how, and the library's size and SHA-256), with a format number, written and
// read only here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace section {

/// The manifest's format. Bumped whenever its fields change meaning or shape; it is part of
/// every cache key, and an entry whose manifest has another format is rebuilt, never loaded.
inline constexpr int manifest_format = 3;

/// The files of an entry `<cache>/entries/<key>/` (a failed build keeps the source, the log and
/// the command in `<cache>/failed/<key>/`).
namespace entry_file {
inline constexpr char const* library = "module.so";
inline constexpr char const* source = "source.cpp";
inline constexpr char const* object = "module.o";        ///< only while building
inline constexpr char const* dependencies = "module.d";  ///< the compiler's, only while building
inline constexpr char const* log = "build.log";
inline constexpr char const* manifest = "manifest.json";
inline constexpr char const* command = "command.txt";  ///< failed builds only
}  // namespace entry_file

/// Why a manifest cannot be used (`kind` none: it can).
struct ManifestProblem {
  enum class Kind { none, damaged, other_format };
  Kind kind = Kind::none;
  int format = 0;       ///< `other_format`: the format it was written in (0: before numbers)
  std::string message;  ///< what is wrong, naming the file and the field
};

struct ManifestReading;

/// A file outside the cache a module was compiled from (a header of the op's own folders), and
/// the SHA-256 of its bytes as compiled: empty when it changed while the module compiled, or
/// its name cannot be kept (not UTF-8), so the entry is never taken as up to date with it.
struct SourceFileHash {
  std::string path;
  std::string sha256;
};

/// What `<cache>/entries/<key>/manifest.json` records.
struct ModuleManifest {
  int format = manifest_format;

  // What the build records.
  std::string module;  ///< the module's name
  std::vector<std::string> ops, inputs, outputs;
  std::string libsection_version;
  std::string compiler;  ///< the compiler's identity
  std::string compile_command, link_command;
  std::string python_abi;
  std::string numpy;  ///< NumPy's version and C-API version
  double build_seconds = 0;
  /// The library may hold several graphs (`generate_together`): this entry's is graph `graph` of
  /// `graphs`, whose symbols end in `graph_suffix(graph, graphs)`. `library_key` is the key
  /// the library was built under: this entry's own, or that of the module of several graphs
  /// (whose file this entry's is a hard link to, or a copy of).
  int graph = 0;
  int graphs = 1;
  std::string library_key;
  /// The headers of the user's folders the module includes (the compiler's dependency list,
  /// less the Python and NumPy headers, which the key covers): an entry whose header changed
  /// since is out of date, rebuilt, never loaded (ccache's direct mode).
  std::vector<SourceFileHash> headers;

  // What the cache adds when it publishes the entry.
  std::string key;
  std::uintmax_t size = 0;   ///< the library's bytes
  std::string sha256;        ///< of the library, in hex
  std::int64_t created = 0;  ///< seconds since the epoch

  /// The JSON text of the file (keys sorted, two-space indent, a final newline).
  std::string to_json() const;
  /// Reads the file's text: the manifest, or why it cannot be used (not JSON, a field missing
  /// or of the wrong type, another format). Never throws.
  static ManifestReading parse(std::string_view text);
};

/// `ModuleManifest::parse`'s answer: `manifest`, or the `problem` that kept it out.
struct ManifestReading {
  std::optional<ModuleManifest> manifest;
  ManifestProblem problem;
};

}  // namespace section
