#include "config.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string_view>

namespace fs = std::filesystem;

namespace lint_config {
namespace {

using Strings = std::vector<std::string>;

// The subset of TOML settings files use: `[tables]`, `key = value` with bare, quoted or dotted
// keys, strings, booleans and (multi-line) arrays of strings, `#` comments. Lines of tables that
// are not section-lint's are skipped unread, so the rest of a pyproject.toml may be any TOML.
class Reader {
 public:
  Reader(fs::path file, std::string text, bool in_pyproject)
      : file_(std::move(file)), text_(std::move(text)) {
    if (in_pyproject) prefix_ = {"tool", "section-lint"};
  }

  std::optional<Config> read() {
    Config config;
    config.file = file_;
    bool found = prefix_.empty();
    bool ours = prefix_.empty();
    Strings table;
    while (pos_ < text_.size()) {
      skip_blank();
      if (pos_ >= text_.size()) break;
      char const c = text_[pos_];
      if (c == '\n' || c == '#') {
        skip_line();
      } else if (c == '[' && header_line()) {
        table = header();
        ours = within(table);
        found = found || ours;
        if (ours) {
          auto const rel = relative(table);
          bool const known = rel.empty() || (rel.size() == 1 && rel[0] == "per-file-ignores") ||
                             (rel.size() == 2 && rel[0] == "signatures");
          if (!known)
            fail("unknown table `[" + dotted(table) +
                 "]` (section-lint has `per-file-ignores` and "
                 "`signatures.\"GLOB\"`)");
        }
      } else if (ours) {
        auto keys = relative(table);
        for (auto& k : key_path()) keys.push_back(std::move(k));
        skip_blank();
        expect('=');
        set(config, keys);
        end_of_line();
      } else {
        skip_line();
      }
    }
    if (!found) return std::nullopt;
    return config;
  }

 private:
  [[noreturn]] void fail(std::string const& message) const {
    auto const end = text_.begin() + static_cast<long>(std::min(pos_, text_.size()));
    auto const line = 1 + std::count(text_.begin(), end, '\n');
    throw ConfigError(file_.string() + ":" + std::to_string(line) + ": " + message);
  }

  static std::string dotted(Strings const& keys) {
    std::string out;
    for (auto const& k : keys) out += (out.empty() ? "" : ".") + k;
    return out;
  }
  bool within(Strings const& table) const {
    return table.size() >= prefix_.size() &&
           std::equal(prefix_.begin(), prefix_.end(), table.begin());
  }
  Strings relative(Strings const& table) const {
    return Strings(table.begin() + static_cast<long>(prefix_.size()), table.end());
  }

  void skip_blank() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }
  void skip_line() {
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    if (pos_ < text_.size()) ++pos_;
  }
  // Blank space, comments and newlines (inside an array).
  void skip_space() {
    for (;;) {
      skip_blank();
      if (pos_ < text_.size() && text_[pos_] == '#') skip_line();
      else if (pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
      else return;
    }
  }
  void expect(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c) fail(std::string("expected `") + c + "`");
    ++pos_;
  }
  void end_of_line() {
    skip_blank();
    if (pos_ < text_.size() && text_[pos_] == '#') skip_line();
    else if (pos_ < text_.size() && text_[pos_] != '\n') fail("expected the end of the line");
    else skip_line();
  }
  // A `[table]` line (`]`, then only blanks or a comment), not an array value that starts a line
  // of some other table's multi-line value (`["a", "b"],`).
  bool header_line() const {
    auto const end = std::min(text_.find('\n', pos_), text_.size());
    auto const line = std::string_view(text_).substr(pos_, end - pos_);
    auto const close = line.rfind(']');
    if (close == std::string_view::npos) return false;
    auto const rest = line.substr(close + 1);
    auto const tail = rest.find_first_not_of(" \t\r");
    return tail == std::string_view::npos || rest[tail] == '#';
  }
  Strings header() {
    ++pos_;
    bool const array = pos_ < text_.size() && text_[pos_] == '[';
    if (array) ++pos_;
    auto keys = key_path();
    expect(']');
    if (array) expect(']');
    end_of_line();
    return keys;
  }
  Strings key_path() {
    Strings keys;
    for (;;) {
      skip_blank();
      keys.push_back(key());
      skip_blank();
      if (pos_ < text_.size() && text_[pos_] == '.') ++pos_;
      else return keys;
    }
  }
  std::string key() {
    if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\'')) return string();
    auto const start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '-'))
      ++pos_;
    if (pos_ == start) fail("expected a key");
    return text_.substr(start, pos_ - start);
  }
  std::string string() {
    char const quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\n') fail("unterminated string");
      if (c == '\\' && quote == '"' && pos_ < text_.size()) {
        char const e = text_[pos_++];
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        if (e != 'n' && e != 't' && e != '"' && e != '\\')
          fail(std::string("unsupported escape `\\") + e + "`");
      }
      out += c;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  Strings string_array(std::string const& name) {
    if (pos_ >= text_.size() || text_[pos_] != '[')
      fail("`" + name + "` must be an array of strings");
    ++pos_;
    Strings out;
    for (;;) {
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ']') break;
      if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\''))
        fail("`" + name + "` must be an array of strings");
      out.push_back(string());
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') ++pos_;
      else if (pos_ >= text_.size() || text_[pos_] != ']')
        fail("expected `,` or `]` in `" + name + "`");
    }
    ++pos_;
    return out;
  }

  void set(Config& config, Strings const& keys) {
    skip_blank();
    std::string const name = keys.empty() ? "" : keys.front();
    if (keys.size() == 3 && name == "signatures") {
      auto it = std::find_if(config.signatures.begin(), config.signatures.end(),
                             [&](auto const& s) { return s.first == keys[1]; });
      if (it == config.signatures.end()) it = config.signatures.insert(it, {keys[1], {}});
      auto& signature = it->second;
      if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\''))
        fail("`" + dotted(keys) + "` must be a string");
      auto value = string();
      if (keys[2] == "inputs") return void(signature.inputs = value);
      if (keys[2] == "outputs") return void(signature.outputs = value);
      if (keys[2] == "params") return void(signature.params = value);
      if (keys[2] == "func-name") return void(signature.func_name = value);
      fail("unknown setting `" + dotted(keys) +
           "` (a signature has inputs, outputs, params and "
           "func-name)");
    }
    if (keys.size() == 2 && name == "per-file-ignores") {
      config.per_file_ignores.emplace_back(keys[1], string_array("per-file-ignores." + keys[1]));
      return;
    }
    if (keys.size() == 1) {
      if (name == "select") return void(config.select = string_array(name));
      if (name == "ignore") return void(config.ignore = string_array(name));
      if (name == "extend-select") return void(config.extend_select = string_array(name));
      if (name == "extra-sections") return void(config.extra_sections = string_array(name));
    }
    fail("unknown setting `" + dotted(keys) +
         "` (section-lint reads select, ignore, extend-select, "
         "extra-sections, per-file-ignores and signatures)");
  }

  fs::path file_;
  std::string text_;
  Strings prefix_;
  std::size_t pos_ = 0;
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

std::optional<Config> read_config(fs::path const& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return Reader(file, text.str(), file.filename() == "pyproject.toml").read();
}

Config const& ConfigFinder::for_directory(fs::path const& start) {
  fs::path const dir = fs::absolute(start).lexically_normal();
  if (auto it = by_dir_.find(dir); it != by_dir_.end()) return it->second;
  std::optional<Config> found;
  std::error_code ec;
  if (fs::is_regular_file(dir / "section-lint.toml", ec))
    found = read_config(dir / "section-lint.toml");
  else if (fs::is_regular_file(dir / "pyproject.toml", ec))
    found = read_config(dir / "pyproject.toml");
  if (!found) {
    fs::path const parent = dir.parent_path();
    found = parent == dir || parent.empty() ? Config{} : for_directory(parent);
  }
  return by_dir_.emplace(dir, std::move(*found)).first->second;
}

}  // namespace lint_config
