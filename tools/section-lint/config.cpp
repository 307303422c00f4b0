#include "config.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <memory>
#include <string_view>
#include <utility>

#include "section/settings.hpp"

namespace fs = std::filesystem;

namespace lint_config {
namespace {

using Strings = std::vector<std::string>;

// toml++ turns the settings file into a tree; this reads section-lint's part of it, every
// complaint naming the file, line and column of the value at fault.
class Reader {
 public:
  explicit Reader(fs::path file) : file_(std::move(file)) {}

  std::optional<Config> read(std::string const& text) {
    toml::table document;
    try {
      document = toml::parse(text, file_.string());
    } catch (toml::parse_error const& e) {
      fail(e.source(), e.description());
    }
    toml::node const* root = &document;
    if (file_.filename() == "pyproject.toml") {
      root = document["tool"]["section-lint"].node();
      if (!root) return std::nullopt;
    }
    Config config;
    config.file = file_;
    auto const* table = root->as_table();
    if (!table) fail(root->source(), "`tool.section-lint` must be a table");
    for (auto const& [key, value] : in_file_order(*table)) set(config, *key, *value);
    return config;
  }

 private:
  [[noreturn]] void fail(toml::source_region const& where, std::string_view message) const {
    throw ConfigError(file_.string() + ":" + std::to_string(where.begin.line) + ":" +
                      std::to_string(where.begin.column) + ": " + std::string(message));
  }

  // A table's entries as the file has them (toml++ keeps them sorted by key): the first
  // matching `signatures` glob wins, so their order matters.
  static std::vector<std::pair<toml::key const*, toml::node const*>> in_file_order(
      toml::table const& table) {
    std::vector<std::pair<toml::key const*, toml::node const*>> entries;
    for (auto const& [key, value] : table) entries.emplace_back(&key, &value);
    std::stable_sort(entries.begin(), entries.end(), [](auto const& a, auto const& b) {
      auto const& x = a.first->source().begin;
      auto const& y = b.first->source().begin;
      return std::pair(x.line, x.column) < std::pair(y.line, y.column);
    });
    return entries;
  }

  Strings strings(toml::node const& value, std::string const& name) const {
    auto const* array = value.as_array();
    if (!array) fail(value.source(), "`" + name + "` must be an array of strings");
    Strings out;
    for (auto const& item : *array) {
      auto const* s = item.as_string();
      if (!s) fail(item.source(), "`" + name + "` must be an array of strings");
      out.push_back(s->get());
    }
    return out;
  }

  toml::table const& table(toml::node const& value, std::string const& name, char const* of) const {
    auto const* t = value.as_table();
    if (!t) fail(value.source(), "`" + name + "` must be a table of " + of);
    return *t;
  }

  void set(Config& config, toml::key const& key, toml::node const& value) {
    std::string const name(key.str());
    if (name == "select") return void(config.select = strings(value, name));
    if (name == "ignore") return void(config.ignore = strings(value, name));
    if (name == "extend-select") return void(config.extend_select = strings(value, name));
    if (name == "extra-sections") return void(config.extra_sections = strings(value, name));
    if (name == "exclude") return void(config.exclude = strings(value, name));
    if (name == "extend-exclude") return void(config.extend_exclude = strings(value, name));
    if (name == "python") {
      auto const* s = value.as_string();
      if (!s) fail(value.source(), "`python` must be a string (an interpreter's path or name)");
      return void(config.python = s->get());
    }
    if (name == "respect-gitignore") {
      auto const* flag = value.as_boolean();
      if (!flag) fail(value.source(), "`respect-gitignore` must be true or false");
      return void(config.respect_gitignore = flag->get());
    }
    if (name == "per-file-ignores") {
      for (auto const& [glob, codes] : in_file_order(table(value, name, "arrays of codes")))
        config.per_file_ignores.emplace_back(
            std::string(glob->str()),
            strings(*codes, "per-file-ignores.\"" + std::string(glob->str()) + "\""));
      return;
    }
    if (name == "signatures") {
      for (auto const& [glob, entry] : in_file_order(table(value, name, "signature tables")))
        config.signatures.emplace_back(std::string(glob->str()),
                                       signature(std::string(glob->str()), *entry));
      return;
    }
    fail(key.source(), "unknown setting `" + name +
                           "` (section-lint reads select, ignore, extend-select, extra-sections, "
                           "exclude, extend-exclude, respect-gitignore, per-file-ignores, python "
                           "and signatures)");
  }

  Config::Signature signature(std::string const& glob, toml::node const& value) const {
    Config::Signature signature;
    std::string const where = "signatures.\"" + glob + "\"";
    for (auto const& [key, part] : table(value, where, "strings")) {
      std::string const name(key.str());
      if (name == "differentiated") {
        auto const* flag = part.as_boolean();
        if (!flag) fail(part.source(), "`" + where + ".differentiated` must be true or false");
        signature.differentiated = flag->get() ? "true" : "false";
        continue;
      }
      auto const* s = part.as_string();
      if (!s) fail(part.source(), "`" + where + "." + name + "` must be a string");
      if (name == "inputs") signature.inputs = s->get();
      else if (name == "outputs") signature.outputs = s->get();
      else if (name == "params") signature.params = s->get();
      else if (name == "func-name") signature.func_name = s->get();
      else if (name == "language") signature.language = s->get();
      else
        fail(key.source(), "unknown setting `" + where + "." + name +
                               "` (a signature has inputs, outputs, params, func-name, "
                               "language and differentiated)");
    }
    return signature;
  }

  fs::path file_;
};

}  // namespace

bool Config::matches(std::string const& glob, fs::path const& path) const {
  auto const absolute = fs::absolute(path).lexically_normal();
  auto const relative =
      absolute.lexically_relative(fs::absolute(file.parent_path()).lexically_normal());
  return ::fnmatch(glob.c_str(), relative.c_str(), 0) == 0 ||
         ::fnmatch(glob.c_str(), absolute.filename().c_str(), 0) == 0;
}

Config::Signature const* Config::signature_for(fs::path const& path) const {
  for (auto const& [glob, signature] : signatures)
    if (matches(glob, path)) return &signature;
  return nullptr;
}

bool Config::ignored_for(fs::path const& path, std::string const& code) const {
  for (auto const& [glob, prefixes] : per_file_ignores) {
    if (!matches(glob, path)) continue;
    for (auto const& p : prefixes) {
      std::string upper = p;
      std::transform(upper.begin(), upper.end(), upper.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      if (code.rfind(upper, 0) == 0) return true;
    }
  }
  return false;
}

std::optional<std::string> read_text(fs::path const& file) {
  // A folder's settings are untrusted: one that becomes a FIFO after the check must not hang
  // the reader (O_NONBLOCK, checked through the descriptor), nor a huge one fill memory.
  int const fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  std::unique_ptr<int, void (*)(int*)> const closed(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uintmax_t>(st.st_size) > section::max_file_bytes_setting())
    return std::nullopt;
  std::string text;
  char buffer[1 << 16];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() + static_cast<std::size_t>(n) > section::max_file_bytes_setting())
      return std::nullopt;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

std::optional<Config> read_config(fs::path const& file) {
  auto const text = read_text(file);
  if (!text) throw ConfigError(file.string() + ": cannot be read");
  return Reader(file).read(*text);
}

Config const& ConfigFinder::for_directory(fs::path const& start) {
  fs::path const dir = fs::absolute(start).lexically_normal();
  if (auto it = by_dir_.find(dir); it != by_dir_.end()) return it->second;
  std::optional<Config> found;
  std::error_code ec;
  for (char const* name : settings_file_names) {
    if (!fs::is_regular_file(dir / name, ec)) continue;
    found = read_config(dir / name);  // none: a pyproject.toml without section-lint's table
    break;
  }
  if (!found) {
    fs::path const parent = dir.parent_path();
    found = parent == dir || parent.empty() ? Config{} : for_directory(parent);
  }
  return by_dir_.emplace(dir, std::move(*found)).first->second;
}

}  // namespace lint_config
