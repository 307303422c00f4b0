// Which files `section-lint` lints below a folder, as ruff chooses them: every *.c and *.h except
// those excluded by name (`exclude`, `extend-exclude`, ruff's default list) or by .gitignore.
// Files named on the command line are always linted.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace lint_files {

/// The folder names excluded unless `exclude` is set: ruff's default list, plus `build` (CMake's
/// and setuptools' build trees) and `__pycache__`.
std::vector<std::string> const& default_exclude();

/// Whether `path` (relative, `/`-separated) matches a gitignore glob: `*` and `?` stop at `/`,
/// `**` as a whole path segment spans folders, `[...]` is a class, `\` escapes.
bool gitignore_glob(std::string_view glob, std::string_view path);

/// The rules of one .gitignore file (or .git/info/exclude), relative to the folder `base`.
class IgnoreFile {
 public:
  IgnoreFile(std::filesystem::path base, std::string const& text);

  /// True when the last rule matching `path` (absolute) ignores it, false when it is a `!` rule
  /// that re-includes it, nothing when no rule matches.
  std::optional<bool> match(std::filesystem::path const& path, bool is_dir) const;

 private:
  struct Rule {
    std::string glob;
    bool negated = false;
    bool dir_only = false;
    bool anchored = false;  // matched against the path below `base`, not just the name
  };
  std::filesystem::path base_;
  std::vector<Rule> rules_;
};

/// What the command line says about file selection; the settings fill in the rest.
struct Selection {
  std::optional<std::vector<std::string>> exclude;  ///< replaces the settings' `exclude`
  std::vector<std::string> extend_exclude;          ///< added to every other exclusion
  std::optional<bool> respect_gitignore;            ///< overrides the settings when given
};

/// The settings that apply to the files of a folder.
using ConfigIn = std::function<lint_config::Config const&(std::filesystem::path const& dir)>;

/// The files to lint for `paths`: `section::collect_lint_paths`'s, with the exclusions of the
/// settings of each folder (`config_in`) and .gitignore applied. A folder that cannot be listed
/// is returned as itself, so that linting it reports why. Throws lint_config::ConfigError.
std::vector<std::string> collect(std::vector<std::string> const& paths, Selection const& selection,
                                 ConfigIn const& config_in);

}  // namespace lint_files
