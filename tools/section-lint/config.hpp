// section-lint's settings files, found as ruff finds its own: in the file's folder or the nearest
// folder above it that has one, `.section-lint.toml`, else `section-lint.toml`, else a
// `pyproject.toml` with a `[tool.section-lint]` table (ruff: `.ruff.toml`, `ruff.toml`,
// `pyproject.toml`). Read with toml++: any TOML 1.0.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lint_config {

/// A settings file that cannot be read; the message names file:line:column.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Config {
  std::filesystem::path file;  ///< where it was read from; empty: no settings file
  std::optional<std::vector<std::string>> select;
  std::vector<std::string> ignore;
  std::vector<std::string> extend_select;
  std::vector<std::string> extra_sections;
  /// File selection (see files.hpp): `exclude` replaces the default list, `extend-exclude` adds.
  std::optional<std::vector<std::string>> exclude;
  std::vector<std::string> extend_exclude;
  std::optional<bool> respect_gitignore;
  /// The interpreter whose headers the compile check uses (`--python`).
  std::optional<std::string> python;
  /// Glob (relative to the settings file's folder, or a bare file name) to code prefixes.
  std::vector<std::pair<std::string, std::vector<std::string>>> per_file_ignores;

  /// An op's signature for the SL6 checks, as the command line's --inputs ... take it.
  struct Signature {
    std::optional<std::string> inputs, outputs, params, func_name, language;
    std::optional<std::string> differentiated;  ///< `"true"`: SL306 and SL307 are reported
  };
  /// Glob to the signature of the op whose files match it (the first match wins).
  std::vector<std::pair<std::string, Signature>> signatures;

  /// Whether `code` is ignored for `path` by `per-file-ignores`.
  bool ignored_for(std::filesystem::path const& path, std::string const& code) const;
  /// The signature for `path`, or null.
  Signature const* signature_for(std::filesystem::path const& path) const;

 private:
  bool matches(std::string const& glob, std::filesystem::path const& path) const;
};

/// Reads the settings in `file` (the whole file for `section-lint.toml`, the
/// `[tool.section-lint]` table of a `pyproject.toml`; none when it has no such table).
/// Throws ConfigError.
std::optional<Config> read_config(std::filesystem::path const& file);

/// The bytes of a regular file; nothing when it is not one or cannot be read.
std::optional<std::string> read_text(std::filesystem::path const& file);

/// The names of settings files in one folder, the first found wins.
inline constexpr char const* settings_file_names[] = {".section-lint.toml", "section-lint.toml",
                                                      "pyproject.toml"};

/// Finds and reads settings for files in the folder `dir`; caches by folder.
class ConfigFinder {
 public:
  Config const& for_directory(std::filesystem::path const& dir);

 private:
  std::map<std::filesystem::path, Config> by_dir_;
};

}  // namespace lint_config
