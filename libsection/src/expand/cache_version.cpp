// The op cache version: a content hash of everything the op's generated code depends on.
#include <string>

#include "base/hash.hpp"
#include "section/expand.hpp"
#include "section/version.hpp"

namespace section {
namespace {

/// Length-prefixed fields, so that no two different inputs serialise to the same bytes.
class Fingerprint {
 public:
  void add(std::string_view key, std::string_view value) {
    data_ += key;
    data_ += '=';
    data_ += std::to_string(value.size());
    data_ += ':';
    data_ += value;
    data_ += '\n';
  }
  void add(std::string_view key, std::optional<int> value) {
    add(key, value ? std::to_string(*value) : std::string("none"));
  }
  void add(std::string_view key, bool value) { add(key, std::string_view(value ? "1" : "0")); }
  std::string const& data() const { return data_; }

 private:
  std::string data_;
};

}  // namespace

std::string op_cache_version(SourceManager const& sm, SectionSet const& sections,
                             OpDescription const& op, ExpandOptions const& options) {
  Fingerprint f;
  f.add("generator", std::to_string(expander_generator_version));
  f.add("libsection", std::string_view(version));
  // The file names that `#line` puts into the code are left out on purpose: they are debug
  // information, and leaving them out lets checkouts at different paths (and machines) share
  // compiled modules.
  for (FileId file : sections.files) f.add("file", sm.file(file).text());
  f.add("func_name", op.func_name.has_value());
  if (op.func_name) f.add("func_name_text", *op.func_name);
  f.add("num_inputs", op.num_inputs);
  f.add("num_outputs", op.num_outputs);
  f.add("check_input", op.check_input);
  f.add("has_params_symbol", op.has_params);
  f.add("params", op.params.has_value());
  if (op.params) {
    f.add("params_type", op.params->type_name);
    for (ParamField const& field : op.params->fields) {
      f.add("param", field.name);
      f.add("param_c_type", field.c_element_type);
    }
  }
  // Only a C op adds the field: the versions of C++ ops (every op before it) stay as they were.
  if (op.language == Language::c) f.add("language", language_name(op.language));
  f.add("line_directives", options.line_directives);
  if (options.line_directives) f.add("resume_file", options.resume_file);
  f.add("newline_fix", options.newline_fix);
  return "ls" + detail::sha256_hex(f.data());
}

}  // namespace section
