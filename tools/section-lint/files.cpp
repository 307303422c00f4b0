#include "files.hpp"

#include "section/lint.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>

namespace fs = std::filesystem;

namespace lint_files {

std::vector<std::string> const& default_exclude() {
  // ruff's `exclude` default (crates/ruff_workspace/src/settings.rs), and two more folders that
  // hold copies or build products rather than sources: `build` and `__pycache__`.
  static std::vector<std::string> const names{".bzr",
                                              ".direnv",
                                              ".eggs",
                                              ".git",
                                              ".git-rewrite",
                                              ".hg",
                                              ".ipynb_checkpoints",
                                              ".mypy_cache",
                                              ".nox",
                                              ".pants.d",
                                              ".pyenv",
                                              ".pytest_cache",
                                              ".pytype",
                                              ".ruff_cache",
                                              ".svn",
                                              ".tox",
                                              ".venv",
                                              ".vscode",
                                              "__pypackages__",
                                              "_build",
                                              "buck-out",
                                              "dist",
                                              "node_modules",
                                              "site-packages",
                                              "venv",
                                              "build",
                                              "__pycache__"};
  return names;
}

namespace {

// One `[...]` class at glob[g] (g just after `[`) against c; sets `end` past the `]`. A `[`
// without a closing `]` is taken literally (returns nullopt).
std::optional<bool> match_class(std::string_view glob, std::size_t g, char c, std::size_t& end) {
  bool negated = false;
  if (g < glob.size() && (glob[g] == '!' || glob[g] == '^')) {
    negated = true;
    ++g;
  }
  bool matched = false;
  bool first = true;
  while (g < glob.size() && (first || glob[g] != ']')) {
    first = false;
    char lo = glob[g];
    if (lo == '\\' && g + 1 < glob.size()) lo = glob[++g];
    char hi = lo;
    if (g + 2 < glob.size() && glob[g + 1] == '-' && glob[g + 2] != ']') {
      hi = glob[g + 2];
      if (hi == '\\' && g + 3 < glob.size()) hi = glob[++g + 2];
      g += 2;
    }
    if (c != '/' && lo <= c && c <= hi) matched = true;
    ++g;
  }
  if (g >= glob.size()) return std::nullopt;
  end = g + 1;
  return matched != negated;
}

bool glob_at(std::string_view glob, std::size_t g, std::string_view path, std::size_t p);

// `*` or `**` at `glob[g]`: whether the rest of the glob matches from some point of the path on.
bool star_at(std::string_view glob, std::size_t g, std::string_view path, std::size_t p) {
  bool const segment_start = g == 0 || glob[g - 1] == '/';
  if (g + 1 < glob.size() && glob[g + 1] == '*' && segment_start &&
      (g + 2 == glob.size() || glob[g + 2] == '/')) {
    if (g + 2 == glob.size()) return true;  // `x/**`: everything below
    // `**/`: zero or more folders, then the rest.
    for (std::size_t q = p;; ++q) {
      if ((q == p || path[q - 1] == '/') && glob_at(glob, g + 3, path, q)) return true;
      if (q >= path.size()) return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;  // `*` (and a `**` inside a name)
  for (std::size_t q = p;; ++q) {
    if (glob_at(glob, g, path, q)) return true;
    if (q >= path.size() || path[q] == '/') return false;
  }
}

// Whether the path's character `c` matches the pattern at `glob[g]` (`?`, a class, a literal),
// `g` moved past that pattern.
bool char_at(std::string_view glob, std::size_t& g, char c) {
  if (glob[g] == '?') {
    ++g;
    return c != '/';
  }
  if (glob[g] == '[') {
    std::size_t end = 0;
    auto const m = match_class(glob, g + 1, c, end);
    if (!m) {  // a literal `[`
      ++g;
      return c == '[';
    }
    g = end;
    return *m;
  }
  char literal = glob[g];
  if (literal == '\\' && g + 1 < glob.size()) literal = glob[++g];
  ++g;
  return c == literal;
}

bool glob_at(std::string_view glob, std::size_t g, std::string_view path, std::size_t p) {
  while (g < glob.size()) {
    if (glob[g] == '*') return star_at(glob, g, path, p);
    if (p >= path.size() || !char_at(glob, g, path[p])) return false;
    ++p;
  }
  return p == path.size();
}

// ruff's exclusion match: a pattern matches the path's name or its absolute path, `*` spanning
// folders (globset's default). Patterns from settings or the command line are taken relative to
// the settings file's folder or the working folder; one without `/` also matches any name.
struct Exclusions {
  std::vector<std::string> names;     // matched against the name and the absolute path
  std::vector<std::string> absolute;  // matched against the absolute path only

  void add_builtin(std::vector<std::string> const& patterns) {
    names.insert(names.end(), patterns.begin(), patterns.end());
  }
  void add_user(std::vector<std::string> const& patterns, fs::path const& root) {
    for (auto const& p : patterns) {
      if (p.find('/') == std::string::npos) names.push_back(p);
      absolute.push_back((root / p).lexically_normal().generic_string());
    }
  }
  bool match(fs::path const& path) const {
    auto const full = path.generic_string();
    auto const name = path.filename().string();
    auto const fn = [](std::string const& glob, std::string const& s) {
      return ::fnmatch(glob.c_str(), s.c_str(), 0) == 0;
    };
    for (auto const& g : names)
      if (fn(g, name) || fn(g, full)) return true;
    for (auto const& g : absolute)
      if (fn(g, full)) return true;
    return false;
  }
};

// Which paths a folder walk leaves out: the exclusions of the settings that apply to each
// folder, and .gitignore. Remembers what it read (settings, repositories, ignore files).
class Excluder {
 public:
  Excluder(Selection const& selection, ConfigIn const& config_in)
      : selection_(selection), config_in_(config_in) {}

  bool excluded(fs::path const& path, bool is_dir) {
    std::error_code ec;
    auto const full = fs::absolute(path, ec).lexically_normal();
    auto const& config = config_in_(full.parent_path());
    if (exclusions_for(config).match(full)) return true;
    bool const gitignore =
        selection_.respect_gitignore.value_or(config.respect_gitignore.value_or(true));
    return gitignore && gitignored(full, is_dir);
  }

 private:
  Exclusions const& exclusions_for(lint_config::Config const& config) {
    auto& slot = exclusions_[&config];
    if (slot) return *slot;
    slot = std::make_unique<Exclusions>();
    auto const cwd = fs::current_path();
    auto const config_root = config.file.empty() ? cwd : fs::absolute(config.file).parent_path();
    if (selection_.exclude) slot->add_user(*selection_.exclude, cwd);
    else if (config.exclude) slot->add_user(*config.exclude, config_root);
    else slot->add_builtin(default_exclude());
    slot->add_user(config.extend_exclude, config_root);
    slot->add_user(selection_.extend_exclude, cwd);
    return *slot;
  }

  // As git (and ruff's walker) does: inside a repository, the .gitignore files from the
  // repository's top down to the path's folder, the nearest first, then .git/info/exclude.
  bool gitignored(fs::path const& path, bool is_dir) {
    auto const top = repository_of(path.parent_path());
    if (!top) return false;
    for (auto dir = path.parent_path();; dir = dir.parent_path()) {
      if (auto const* file = ignore_file(dir / ".gitignore"))
        if (auto const m = file->match(path, is_dir)) return *m;
      if (dir == *top || dir == dir.parent_path()) break;
    }
    if (auto const* file = ignore_file(*top / ".git" / "info" / "exclude", *top))
      if (auto const m = file->match(path, is_dir)) return *m;
    return false;
  }

  std::optional<fs::path> repository_of(fs::path const& dir) {
    if (auto it = repositories_.find(dir); it != repositories_.end()) return it->second;
    std::error_code ec;
    std::optional<fs::path> top;
    if (fs::exists(dir / ".git", ec)) top = dir;  // a folder, or a file in a worktree
    else if (dir.parent_path() != dir) top = repository_of(dir.parent_path());
    return repositories_[dir] = top;
  }

  IgnoreFile const* ignore_file(fs::path const& file, std::optional<fs::path> base = {}) {
    auto it = ignore_files_.find(file);
    if (it == ignore_files_.end()) {
      std::unique_ptr<IgnoreFile> parsed;
      if (auto const text = lint_config::read_text(file))
        parsed = std::make_unique<IgnoreFile>(base.value_or(file.parent_path()), *text);
      it = ignore_files_.emplace(file, std::move(parsed)).first;
    }
    return it->second.get();
  }

  Selection const& selection_;
  ConfigIn const& config_in_;
  std::map<lint_config::Config const*, std::unique_ptr<Exclusions>> exclusions_;
  std::map<fs::path, std::optional<fs::path>> repositories_;
  std::map<fs::path, std::unique_ptr<IgnoreFile>> ignore_files_;
};

}  // namespace

bool gitignore_glob(std::string_view glob, std::string_view path) {
  return glob_at(glob, 0, path, 0);
}

IgnoreFile::IgnoreFile(fs::path base, std::string const& text) : base_(std::move(base)) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Trailing spaces go unless escaped with a backslash.
    while (!line.empty() && line.back() == ' ' &&
           !(line.size() >= 2 && line[line.size() - 2] == '\\'))
      line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    Rule rule;
    if (line[0] == '!') {
      rule.negated = true;
      line.erase(0, 1);
    } else if (line.starts_with("\\!") || line.starts_with("\\#")) {
      line.erase(0, 1);
    }
    if (!line.empty() && line.back() == '/') {
      rule.dir_only = true;
      line.pop_back();
    }
    if (line.empty()) continue;
    rule.anchored = line.find('/') != std::string::npos;  // `/x`, `a/b`, `**/x` ...
    if (line[0] == '/') line.erase(0, 1);
    rule.glob = std::move(line);
    rules_.push_back(std::move(rule));
  }
}

std::optional<bool> IgnoreFile::match(fs::path const& path, bool is_dir) const {
  auto const relative = path.lexically_relative(base_).generic_string();
  if (relative.empty() || relative.starts_with("..")) return std::nullopt;
  auto const name = path.filename().string();
  for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
    if (it->dir_only && !is_dir) continue;
    if (gitignore_glob(it->glob, it->anchored ? relative : name)) return !it->negated;
  }
  return std::nullopt;
}

std::vector<std::string> collect(std::vector<std::string> const& paths, Selection const& selection,
                                 ConfigIn const& config_in) {
  Excluder excluder(selection, config_in);
  return section::collect_lint_paths(paths, nullptr, [&](fs::path const& path, bool is_dir) {
    return excluder.excluded(path, is_dir);
  });
}

}  // namespace lint_files
