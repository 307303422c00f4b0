// The `c_*` methods of an expansion and the macros each defines around its section's text: the
// one table the expander, the linter, the tools, the bindings and the tests read.
#include <algorithm>
#include <array>
#include <charconv>

#include "expand/methods.hpp"
#include "section/parse.hpp"

namespace section {
namespace {

constexpr MacroScope none{};
constexpr MacroScope apply{.apply = true};
constexpr MacroScope apply_sub{.apply = true, .sub = true};
constexpr MacroScope all{.apply = true, .sub = true, .io = true};

// `init_code` and `support_code` are shared by every apply of the op: no per-apply macros.
constexpr std::array<ExpansionMethod, 9> methods = {{
    {"c_init_code", "init_code", none},
    {"c_support_code", "support_code", none},
    {"c_init_code_apply", "init_code_apply", apply},
    {"c_support_code_apply", "support_code_apply", apply},
    {"c_support_code_struct", "support_code_struct", apply},
    {"c_cleanup_code_struct", "cleanup_code_struct", apply},
    {"c_init_code_struct", "init_code_struct", apply_sub},
    {"c_code", "code", all},
    {"c_code_cleanup", "code_cleanup", all},
}};

// One method per section tag of the parser, and no other.
constexpr bool one_method_per_tag() {
  if (methods.size() != section_tags.size()) return false;
  for (std::string_view tag : section_tags) {
    if (std::find_if(methods.begin(), methods.end(),
                     [&](ExpansionMethod const& m) { return m.tag == tag; }) == methods.end())
      return false;
  }
  return true;
}
static_assert(one_method_per_tag(), "expansion_methods() must name each of section_tags once");

// Where each single-string method's result lives (`c_init_code` is a list, `c_code` optional).
constexpr std::array<std::pair<std::string_view, std::string Expansion::*>, 7> text_members = {{
    {"support_code", &Expansion::support_code},
    {"init_code_apply", &Expansion::init_code_apply},
    {"support_code_apply", &Expansion::support_code_apply},
    {"support_code_struct", &Expansion::support_code_struct},
    {"cleanup_code_struct", &Expansion::cleanup_code_struct},
    {"init_code_struct", &Expansion::init_code_struct},
    {"code_cleanup", &Expansion::code_cleanup},
}};

std::optional<std::size_t> parse_index(std::string_view digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  std::size_t value = 0;
  auto const [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

/// `INPUT_3` → input 3; `OUTPUT_0` → output 0.
std::optional<std::pair<bool, std::size_t>> io_index(std::string_view name) {
  for (auto [prefix, input] : {std::pair{std::string_view("INPUT_"), true},
                               std::pair{std::string_view("OUTPUT_"), false}}) {
    if (name.starts_with(prefix)) {
      if (auto k = parse_index(name.substr(prefix.size()))) return std::pair{input, *k};
    }
  }
  return std::nullopt;
}

}  // namespace

namespace detail {

std::string* method_text(Expansion& e, std::string_view tag) {
  for (auto const& [name, member] : text_members)
    if (name == tag) return &(e.*member);
  return nullptr;
}

}  // namespace detail

std::span<ExpansionMethod const> expansion_methods() { return methods; }

ExpansionMethod const* expansion_method_of(std::string_view tag) {
  auto it = std::find_if(methods.begin(), methods.end(),
                         [&](ExpansionMethod const& m) { return m.tag == tag; });
  return it == methods.end() ? nullptr : &*it;
}

MethodResult method_result(Expansion const& e, ExpansionMethod const& method) {
  if (method.tag == "init_code") return e.init_code;
  if (method.tag == "code") return e.code ? MethodResult(*e.code) : MethodResult();
  for (auto const& [name, member] : text_members)
    if (name == method.tag) return e.*member;
  return {};
}

GeneratedMacro classify_generated_macro(std::string_view name) {
  if (name == "FAIL" || name == "PARAMS") return {MacroFamily::sub, false, std::nullopt};
  if (auto io = io_index(name))
    return {.family = MacroFamily::io, .is_input = io->first, .index = io->second};
  if (name == "APPLY_SPECIFIC" || name == "PARAMS_TYPE")
    return {MacroFamily::apply, false, std::nullopt};
  if (name.starts_with("DTYPE_PARAM_") && name.size() > 12)
    return {MacroFamily::apply, false, std::nullopt};
  for (std::string_view prefix : {"DTYPE_", "TYPENUM_", "ITEMSIZE_"}) {
    if (name.starts_with(prefix)) {
      if (auto io = io_index(name.substr(prefix.size())))
        return {.family = MacroFamily::apply, .is_input = io->first, .index = io->second};
    }
  }
  return {};
}

std::string tags_defining(MacroFamily family) {
  std::vector<std::string_view> tags;
  for (ExpansionMethod const& m : methods)
    if (family != MacroFamily::none && m.macros.defines(family)) tags.push_back(m.tag);
  std::string out;
  for (std::size_t i = 0; i < tags.size(); ++i) {
    out += i == 0 ? "" : i + 1 == tags.size() ? " and " : ", ";
    out += "`" + std::string(tags[i]) + "`";
  }
  return out;
}

}  // namespace section
