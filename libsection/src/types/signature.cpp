// Reading signature strings, and the names PyTensor's CLinker gives a single-node graph.
#include "section/signature.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "base/hash.hpp"
#include "base/text.hpp"
#include "section/names.hpp"

namespace section {
namespace {

std::string known_dtype_list() {
  std::string out;
  for (DtypeInfo const& d : known_dtypes()) out += (out.empty() ? "" : ", ") + d.name;
  return out + ", object";
}

/// A cursor over one item of a signature string, reporting errors with the item's position in
/// the whole string.
class TypeReader {
 public:
  TypeReader(std::string_view whole, std::size_t begin, std::size_t end, std::string label)
      : whole_(whole), pos_(begin), end_(end), item_begin_(begin), label_(std::move(label)) {}

  TypeSpec read() {
    skip_blanks();
    std::size_t word_begin = pos_;
    while (pos_ < end_ && (std::isalnum(static_cast<unsigned char>(whole_[pos_])) != 0)) ++pos_;
    std::string word(whole_.substr(word_begin, pos_ - word_begin));
    if (word.empty()) fail(pos_ == end_ ? "expected a type" : "expected a dtype name", word_begin);

    TypeSpec type;
    if (word == "object") {
      type.kind = TypeSpec::Kind::generic;
    } else if (dtype_info(word)) {
      type.kind = TypeSpec::Kind::scalar;
      type.dtype = word;
    } else {
      fail("unknown dtype `" + word + "` (known: " + known_dtype_list() + ")", word_begin);
    }
    skip_blanks();
    if (pos_ < end_ && whole_[pos_] == '[') {
      if (type.kind == TypeSpec::Kind::generic) fail("`object` takes no dimensions", pos_);
      read_dimensions(type);
    }
    skip_blanks();
    if (pos_ < end_) fail("unexpected `" + std::string(1, whole_[pos_]) + "`", pos_);
    return type;
  }

 private:
  // `[` `]` (a 0-d tensor) or `[` `:` (`,` `:`)* `]`
  void read_dimensions(TypeSpec& type) {
    type.kind = TypeSpec::Kind::tensor;
    ++pos_;  // '['
    skip_blanks();
    if (pos_ < end_ && whole_[pos_] == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_blanks();
      expect(':', "expected `:` (one per dimension) or `]` (0-d)");
      ++type.ndim;
      skip_blanks();
      if (pos_ < end_ && whole_[pos_] == ',') {
        ++pos_;
        continue;
      }
      expect(']', "expected `,` or `]`");
      return;
    }
  }

  void expect(char c, std::string const& message) {
    if (pos_ >= end_ || whole_[pos_] != c) fail(message, pos_);
    ++pos_;
  }

  void skip_blanks() {
    while (pos_ < end_ && is_blank(whole_[pos_])) ++pos_;
  }

  [[noreturn]] void fail(std::string const& message, std::size_t at) const {
    std::string_view item = whole_.substr(item_begin_, end_ - item_begin_);
    std::string where =
        at >= whole_.size() ? "at the end of" : "at character " + std::to_string(at + 1) + " of";
    throw signature_error(label_ + " `" + std::string(item) + "`: " + message + " " + where + " `" +
                          std::string(whole_) + "`");
  }

  std::string_view whole_;
  std::size_t pos_;
  std::size_t end_;
  std::size_t item_begin_;
  std::string label_;
};

/// Splits at commas outside brackets: `[begin, end)` of each item.
std::vector<std::pair<std::size_t, std::size_t>> split_items(std::string_view text,
                                                             std::string_view role) {
  std::vector<std::pair<std::size_t, std::size_t>> items;
  std::size_t begin = 0;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']') --depth;
    if (depth < 0) {
      throw signature_error(std::string(role) + " list: unmatched `]` at character " +
                            std::to_string(i + 1) + " of `" + std::string(text) + "`");
    }
    if (text[i] == ',' && depth == 0) {
      items.emplace_back(begin, i);
      begin = i + 1;
    }
  }
  items.emplace_back(begin, text.size());
  return items;
}

bool is_blank_text(std::string_view text) {
  return std::all_of(text.begin(), text.end(), is_blank);
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<std::string> TypeSpec::dtype_name() const {
  if (kind == Kind::generic) return std::nullopt;
  return dtype;
}

std::string TypeSpec::pytensor_str() const {
  switch (kind) {
    case Kind::generic: return "Generic";
    case Kind::scalar: return dtype;
    case Kind::tensor: break;
  }
  // TensorType.__str__: the shape tuple printed by Python with `None` shown as `?`.
  std::string shape = "(";
  for (int i = 0; i < ndim; ++i) shape += i == 0 ? "?" : ", ?";
  shape += ndim == 1 ? ",)" : ")";
  static constexpr char const* names[] = {"Scalar", "Vector", "Matrix"};
  std::string name = ndim <= 2 ? names[ndim] : "Tensor" + std::to_string(ndim);
  return name + "(" + dtype + ", shape=" + shape + ")";
}

std::string TypeSpec::c_element_type() const { return kind == Kind::generic ? "" : "npy_" + dtype; }

std::string TypeSpec::to_string() const {
  switch (kind) {
    case Kind::generic: return "object";
    case Kind::scalar: return dtype;
    case Kind::tensor: break;
  }
  std::string dims;
  for (int i = 0; i < ndim; ++i) dims += i == 0 ? ":" : ",:";
  return dtype + "[" + dims + "]";
}

TypeSpec parse_type(std::string_view text) {
  return TypeReader(text, 0, text.size(), "type").read();
}

std::vector<TypeSpec> parse_type_list(std::string_view text, std::string_view role) {
  std::vector<TypeSpec> types;
  if (is_blank_text(text)) return types;
  auto items = split_items(text, role);
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto [begin, end] = items[i];
    types.push_back(
        TypeReader(text, begin, end, std::string(role) + " " + std::to_string(i)).read());
  }
  return types;
}

std::vector<NamedType> parse_params(std::string_view text) {
  std::vector<NamedType> fields;
  if (is_blank_text(text)) return fields;
  std::set<std::string, std::less<>> seen;
  auto items = split_items(text, "params");
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto [begin, end] = items[i];
    std::string label = "param " + std::to_string(i);
    std::string_view item = text.substr(begin, end - begin);
    std::size_t colon = item.find(':');
    std::string_view name = trimmed(item.substr(0, colon));
    auto where = [&](std::size_t at) {
      return " at character " + std::to_string(at + 1) + " of `" + std::string(text) + "`";
    };
    if (colon == std::string_view::npos) {
      throw signature_error(label + " `" + std::string(item) + "`: expected `name:type`" +
                            where(end));
    }
    if (name.empty()) {
      throw signature_error(label + " `" + std::string(item) +
                            "`: expected a field name before `:`" + where(begin));
    }
    if (!is_c_identifier(name)) {
      throw signature_error(label + " `" + std::string(item) + "`: `" + std::string(name) +
                            "` is not a C identifier" + where(begin));
    }
    if (!seen.insert(std::string(name)).second) {
      throw signature_error(label + " `" + std::string(item) + "`: field `" + std::string(name) +
                            "` appears twice" + where(begin));
    }
    fields.push_back({std::string(name), TypeReader(text, begin + colon + 1, end, label).read()});
  }
  return fields;
}

std::vector<TypeSpec> parse_type_strings(std::vector<std::string> const& texts,
                                         std::string_view role) {
  std::vector<TypeSpec> types;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    try {
      types.push_back(parse_type(texts[i]));
    } catch (signature_error const& e) {
      throw signature_error(std::string(role) + "[" + std::to_string(i) + "]: " + e.what());
    }
  }
  return types;
}

std::vector<NamedType> parse_param_strings(
    std::vector<std::pair<std::string, std::string>> const& fields) {
  std::vector<NamedType> out;
  for (auto const& [name, type] : fields) {
    try {
      out.push_back({name, parse_type(type)});
    } catch (signature_error const& e) {
      throw signature_error("params[" + name + "]: " + e.what());
    }
  }
  return out;
}

ParamsSpec params_spec(std::vector<NamedType> fields) {
  // Field names become struct members and `DTYPE_PARAM_<name>` macros in generated C.
  for (NamedType const& field : fields) check_c_identifier(field.name, "params field");
  std::sort(fields.begin(), fields.end(),
            [](NamedType const& a, NamedType const& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < fields.size(); ++i)
    if (fields[i].name == fields[i - 1].name)
      throw signature_error("params field `" + fields[i].name + "` appears twice");
  std::string names, types;
  ParamsSpec spec;
  for (NamedType const& field : fields) {
    names += (names.empty() ? "" : ",") + field.name;
    types += (types.empty() ? "" : ",") + field.type.pytensor_str();
    spec.fields.push_back({field.name, field.type.c_element_type()});
  }
  spec.type_name = "_Params_" + detail::sha256_hex(names) + "_" + detail::sha256_hex(types);
  return spec;
}

std::string pytensor_failure_code(int id) {
  std::string const n = std::to_string(id);
  return "{\n"
         "        __failure = " +
         n +
         ";\n"
         "        if (!PyErr_Occurred()) {\n"
         "            PyErr_SetString(PyExc_RuntimeError,\n"
         "                \"Unexpected error in an Op's C code. \"\n"
         "                \"No Python exception was set.\");\n"
         "        }\n"
         "        goto __label_" +
         n + ";}";
}

std::string pytensor_failure_code_init(int id) {
  return "{\n"
         "        if (!PyErr_Occurred()) {\n"
         "            PyErr_SetString(PyExc_RuntimeError,\n"
         "                \"Unexpected error in an Op's C code. \"\n"
         "                \"No Python exception was set.\");\n"
         "            }\n"
         "        return " +
         std::to_string(id) +
         ";\n"
         "}";
}

}  // namespace section
