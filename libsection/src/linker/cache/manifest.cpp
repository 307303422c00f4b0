// The manifest of a cache entry as JSON: the only code that writes or reads it.
#include "section/linker/cache/manifest.hpp"

#include <limits>
#include <nlohmann/json.hpp>

namespace section {
namespace {

using nlohmann::json;

std::string const manifest_file = entry_file::manifest;

/// Reads fields of the manifest's object; the first missing or mistyped one is the problem.
class FieldReader {
 public:
  explicit FieldReader(json const& object) : object_(object) {}
  std::string const& problem() const { return problem_; }

  void read(char const* name, std::string& into) {
    if (auto const* v = field(name, "text", [](json const& v) { return v.is_string(); }))
      into = v->get<std::string>();
  }
  void read(char const* name, std::vector<std::string>& into) {
    auto const texts = [](json const& v) {
      if (!v.is_array()) return false;
      for (auto const& item : v)
        if (!item.is_string()) return false;
      return true;
    };
    if (auto const* v = field(name, "list of text", texts))
      into = v->get<std::vector<std::string>>();
  }
  void read(char const* name, std::uintmax_t& into) {
    if (auto const* v =
            field(name, "in bytes", [](json const& v) { return v.is_number_unsigned(); }))
      into = v->get<std::uintmax_t>();
  }
  void read(char const* name, std::int64_t& into) {
    if (auto const* v = field(name, "in seconds since the epoch",
                              [](json const& v) { return v.is_number_integer(); }))
      into = v->get<std::int64_t>();
  }
  void read(char const* name, int& into) {
    auto const count = [](json const& v) {
      return v.is_number_integer() && v.get<std::int64_t>() >= 0 &&
             v.get<std::int64_t>() <= std::numeric_limits<int>::max();
    };
    if (auto const* v = field(name, "count", count)) into = v->get<int>();
  }
  void read(char const* name, std::vector<SourceFileHash>& into) {
    auto const hashes = [](json const& v) {
      if (!v.is_array()) return false;
      for (auto const& item : v)
        if (!item.is_object() || !item.contains("path") || !item["path"].is_string() ||
            !item.contains("sha256") || !item["sha256"].is_string())
          return false;
      return true;
    };
    if (auto const* v = field(name, "list of files and their SHA-256", hashes))
      for (auto const& item : *v)
        into.push_back({item["path"].get<std::string>(), item["sha256"].get<std::string>()});
  }
  void read(char const* name, double& into) {
    if (auto const* v = field(name, "in seconds", [](json const& v) { return v.is_number(); }))
      into = v->get<double>();
  }

 private:
  template <class Check>
  json const* field(char const* name, char const* what, Check const& check) {
    if (!problem_.empty()) return nullptr;
    auto const it = object_.find(name);
    if (it != object_.end() && check(*it)) return &*it;
    problem_ = manifest_file + " has no " + name + " " + what;
    return nullptr;
  }

  json const& object_;
  std::string problem_;
};

ManifestReading unusable(ManifestProblem::Kind kind, std::string message, int format = 0) {
  return {std::nullopt, ManifestProblem{kind, format, std::move(message)}};
}

}  // namespace

std::string ModuleManifest::to_json() const {
  json files = json::array();
  for (auto const& h : headers) files.push_back({{"path", h.path}, {"sha256", h.sha256}});
  json const object = {
      {"format", format},
      {"module", module},
      {"ops", ops},
      {"inputs", inputs},
      {"outputs", outputs},
      {"libsection_version", libsection_version},
      {"compiler", compiler},
      {"compile_command", compile_command},
      {"link_command", link_command},
      {"python_abi", python_abi},
      {"numpy", numpy},
      {"build_seconds", build_seconds},
      {"graph", graph},
      {"graphs", graphs},
      {"library_key", library_key},
      {"headers", files},
      {"key", key},
      {"size", size},
      {"sha256", sha256},
      {"created", created},
  };
  // A text field that is not UTF-8 (a path) is kept readable rather than failing the build; a
  // header's such path has no hash (SourceFileHash), so nothing relies on it.
  return object.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

ManifestReading ModuleManifest::parse(std::string_view text) {
  using Kind = ManifestProblem::Kind;
  auto const object = json::parse(text, nullptr, false);
  if (object.is_discarded() || !object.is_object())
    return unusable(Kind::damaged, manifest_file + " is not a JSON object");

  // The format first: another format's fields may mean something else, so none is read.
  auto const format = object.find("format");
  if (format == object.end())
    return unusable(
        Kind::other_format,
        manifest_file + " has no format number (it was written before manifests had one)");
  if (!format->is_number_integer() || format->get<std::int64_t>() < 0 ||
      format->get<std::int64_t>() > std::numeric_limits<int>::max())
    return unusable(Kind::damaged, manifest_file + " has no format number");
  int const written = static_cast<int>(format->get<std::int64_t>());
  if (written != manifest_format)
    return unusable(Kind::other_format,
                    manifest_file + " is in format " + std::to_string(written) +
                        "; this libsection reads format " + std::to_string(manifest_format),
                    written);

  ModuleManifest m;
  FieldReader fields(object);
  // The fields the cache checks the library against first, so their messages come first.
  fields.read("key", m.key);
  fields.read("size", m.size);
  fields.read("sha256", m.sha256);
  fields.read("created", m.created);
  fields.read("module", m.module);
  fields.read("ops", m.ops);
  fields.read("inputs", m.inputs);
  fields.read("outputs", m.outputs);
  fields.read("libsection_version", m.libsection_version);
  fields.read("compiler", m.compiler);
  fields.read("compile_command", m.compile_command);
  fields.read("link_command", m.link_command);
  fields.read("python_abi", m.python_abi);
  fields.read("numpy", m.numpy);
  fields.read("build_seconds", m.build_seconds);
  fields.read("graph", m.graph);
  fields.read("graphs", m.graphs);
  fields.read("library_key", m.library_key);
  fields.read("headers", m.headers);
  if (!fields.problem().empty()) return unusable(Kind::damaged, fields.problem());
  if (m.graphs < 1 || m.graph >= m.graphs)
    return unusable(Kind::damaged, manifest_file + " names graph " + std::to_string(m.graph) +
                                       " of " + std::to_string(m.graphs));
  return {std::move(m), {}};
}

}  // namespace section
