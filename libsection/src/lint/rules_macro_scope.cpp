// section-lint SL3xx: macros used in sections where the expander does not define them.
#include <charconv>
#include <optional>

#include "lint/checks.hpp"
#include "section/expand.hpp"

namespace section::lint_detail {
namespace {

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

/// The tags whose text sees `family`, for messages: "`code` and `code_cleanup`".
std::string tags_with(MacroFamily family) {
  std::vector<std::string_view> tags;
  for (ExpansionMethod const& m : expansion_methods())
    if (family == MacroFamily::sub ? m.macros.sub : m.macros.io) tags.push_back(m.tag);
  std::string out;
  for (std::size_t i = 0; i < tags.size(); ++i) {
    out += i == 0 ? "" : i + 1 == tags.size() ? " and " : ", ";
    out += "`" + std::string(tags[i]) + "`";
  }
  return out;
}

void report_out_of_scope(std::string_view name, MacroFamily family, std::string_view tag,
                         SourceRange range, std::vector<Diagnostic>& out) {
  switch (family) {
    case MacroFamily::sub:
      out.push_back(make_diagnostic("SL301",
                                    backquoted(name) + " is not defined in section " +
                                        backquoted(tag) + "; only " + tags_with(family) +
                                        " have it",
                                    range));
      break;
    case MacroFamily::io:
      out.push_back(make_diagnostic("SL302",
                                    backquoted(name) + " is not defined in section " +
                                        backquoted(tag) + "; only " + tags_with(family) +
                                        " have it",
                                    range));
      break;
    case MacroFamily::apply: {
      auto d = make_diagnostic("SL303",
                               backquoted(name) + " is not defined in section " + backquoted(tag) +
                                   ", which is shared by every apply of the op",
                               range);
      d.notes.push_back({"move this code to `" + std::string(tag) + "_apply`", {}});
      out.push_back(std::move(d));
      break;
    }
    case MacroFamily::none: break;
  }
}

/// Whether the expander defines `family` around section `tag`, from its method table.
bool in_scope(MacroFamily family, std::string_view tag) {
  ExpansionMethod const* method = expansion_method_of(tag);
  if (!method) return true;  // an extra tag: pasted by its own op class, macros unknown
  switch (family) {
    case MacroFamily::sub: return method->macros.sub;
    case MacroFamily::io: return method->macros.io;
    case MacroFamily::apply: return method->macros.apply;
    case MacroFamily::none: return true;
  }
  return true;
}

}  // namespace

GeneratedMacro classify_macro(std::string_view name) {
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

void for_each_macro_use(FileView const& file, std::function<void(MacroUse const&)> const& visit) {
  for (auto const& block : file.blocks) {
    std::string_view const tag = block.block.tag;
    if (!is_section_tag(tag)) continue;  // SL201 already; its scope is unknown
    for (auto const& token : block.body.tokens) {
      if (token.kind != TokenKind::identifier) continue;
      auto const name = file.spelling(token);
      auto const macro = classify_macro(name);
      if (macro.family == MacroFamily::none) continue;
      visit({name, macro, tag, file.range(token), in_scope(macro.family, tag)});
    }
  }
}

void check_macro_scope(FileView const& file, std::vector<Diagnostic>& out) {
  for_each_macro_use(file, [&](MacroUse const& use) {
    if (!use.in_scope) report_out_of_scope(use.name, use.macro.family, use.tag, use.range, out);
  });
  for (auto const& block : file.blocks) {
    if (!is_section_tag(block.block.tag)) continue;
    for (auto const& directive : block.body.directives) {
      if (directive.name != "define" || !directive.macro) continue;
      auto const name = file.spelling(*directive.macro);
      if (classify_macro(name).family == MacroFamily::none) continue;
      out.push_back(make_diagnostic("SL304",
                                    backquoted(name) + " is generated by the expander; defining it "
                                                       "here clashes with the generated definition",
                                    file.range(*directive.macro)));
    }
  }
}

}  // namespace section::lint_detail
