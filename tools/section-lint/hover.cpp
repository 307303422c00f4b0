// Hover on a generated macro: what it is, and its definition for the file's configured
// signature in the section under the cursor.
#include "hover.hpp"

#include "lsp_text.hpp"

#include "section/chars.hpp"
#include "section/expand.hpp"
#include "section/parse.hpp"

namespace lint_server {
namespace {

char const* family_name(section::MacroFamily family) {
  switch (family) {
    case section::MacroFamily::sub: return "a `sub` macro (the failure code, the params variable)";
    case section::MacroFamily::io: return "an input/output variable macro";
    case section::MacroFamily::apply: return "a per-apply macro (node name, dtypes, params types)";
    case section::MacroFamily::none: break;
  }
  return "";
}

/// The `#define name ...` line (with its continuation lines) of a generated method string.
std::optional<std::string> definition_in(std::string_view method, std::string_view name) {
  std::size_t at = 0;
  while ((at = method.find("#define ", at)) != std::string_view::npos) {
    auto const start = at;
    at += 8;
    if (start > 0 && method[start - 1] != '\n') continue;
    if (method.substr(at, name.size()) != name) continue;
    auto const after = at + name.size();
    if (after < method.size() && method[after] != ' ' && method[after] != '(') continue;
    auto end = start;
    while (true) {
      end = method.find('\n', end);
      if (end == std::string_view::npos) end = method.size();
      if (end > start && method[end - 1] == '\\' && end < method.size()) {
        ++end;
        continue;
      }
      break;
    }
    return std::string(method.substr(start, end - start));
  }
  return std::nullopt;
}

/// What the hover says of `name` in a section whose method defines its family, for the file's
/// configured signature: its definition there, read off the expanded method string.
std::string configured_definition(Findings const& f, section::Block const& block,
                                  section::ExpansionMethod const& method, std::string const& name) {
  std::string out;
  // Expand this file for the configured signature and read the macro off the method string.
  auto const sections = section::merge_sections(f.sm, {0});
  auto const node = section::single_node_context(f.op);
  section::ExpandOptions options;
  options.line_directives = false;
  auto const expansion = section::expand(f.sm, sections, f.op, node, options);
  std::optional<std::string> definition;
  auto const result = section::method_result(expansion, method);
  if (auto const* s = std::get_if<std::string>(&result)) definition = definition_in(*s, name);
  if (auto const* list = std::get_if<std::vector<std::string>>(&result))
    for (auto const& s : *list)
      if (!definition) definition = definition_in(s, name);
  if (!definition) definition = definition_in(expansion.macro_defines, name);
  if (definition) {
    out += "In section `" + block.tag + "` (`" + std::string(method.name) +
           "`), for the configured signature:\n\n```c\n" + *definition + "\n```";
  } else {
    out += "Section `" + block.tag + "` has this family, but the configured signature (" +
           std::to_string(f.op.inputs->size()) + " inputs, " +
           std::to_string(f.op.outputs->size()) + " outputs" + (f.op.has_params ? ", params" : "") +
           ") does **not** define `" + name + "`.";
  }
  return out;
}

}  // namespace

json macro_hover(Findings const& f, std::string_view text, std::size_t at) {
  std::size_t begin = at, end = at;
  while (begin > 0 && section::is_identifier_char(text[begin - 1])) --begin;
  while (end < text.size() && section::is_identifier_char(text[end])) ++end;
  if (begin == end) return nullptr;
  std::string const name(text.substr(begin, end - begin));
  auto const family = section::classify_generated_macro(name).family;
  if (family == section::MacroFamily::none) return nullptr;

  // The section under the cursor, as the parser splits the file.
  std::vector<section::Diagnostic> ignored;
  auto const parsed = section::parse_file(f.sm, 0, ignored);
  section::Block const* block = nullptr;
  for (auto const& b : parsed.blocks)
    if (b.body.begin <= begin && end <= b.body.end) block = &b;
  std::string value = "`" + name + "` is " + family_name(family) + " the expander generates.\n\n";
  if (!block) {
    value += "It is outside every section here.";
  } else if (auto const* method = section::expansion_method_of(block->tag); !method) {
    value += "Section `" + block->tag +
             "` is not one of the nine (an extra section its op class pastes, or a mistyped "
             "tag): which macros it sees is not known here.";
  } else if (!method->macros.defines(family)) {
    value += "**Not defined** in section `" + block->tag + "`: only " +
             section::tags_defining(family) + " have it.";
  } else if (!f.op.inputs || !f.op.outputs) {
    value += "Defined in section `" + block->tag + "` (`" + std::string(method->name) +
             "`). No signature is configured for this file, so its value is not known: give "
             "one in `[tool.section-lint.signatures.\"GLOB\"]` (inputs, outputs, params).";
  } else {
    value += configured_definition(f, *block, *method, name);
  }
  return {{"contents", {{"kind", "markdown"}, {"value", value}}},
          {"range", lsp_range(text, begin, end)}};
}

}  // namespace lint_server
