// The one translation unit that instantiates the marker grammar.
#include "parse/x3/marker_grammar.hpp"

#include "parse/x3/marker_grammar_def.hpp"

namespace section::parser {

namespace {

template <typename Rule, typename Ast>
std::optional<Ast> parse_whole_line(Rule const& rule, std::string_view line) {
  char const* first = line.data();
  char const* const last = line.data() + line.size();
  Ast result;
  if (x3::parse(first, last, rule, result) && first == last) return result;
  return std::nullopt;
}

}  // namespace

std::optional<ast::section_marker> parse_section_marker(std::string_view line) {
  return parse_whole_line<decltype(section_marker), ast::section_marker>(section_marker, line);
}

std::optional<ast::legacy_marker> parse_legacy_marker(std::string_view line) {
  return parse_whole_line<decltype(legacy_marker), ast::legacy_marker>(legacy_marker, line);
}

}  // namespace section::parser
