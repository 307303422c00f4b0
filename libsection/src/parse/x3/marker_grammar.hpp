// The marker-line grammar (Boost.Spirit X3). All Spirit code of libsection lives in this folder,
// so moving to X4 or a hand-written scanner touches nothing else.
#pragma once

#include <optional>
#include <string_view>

#include "parse/x3/marker_ast.hpp"

namespace section::parser {

/// Splits a line that starts (after blanks) with `#` and `section` in any case. Nothing if the
/// line does not have that shape at all.
std::optional<ast::section_marker> parse_section_marker(std::string_view line);

/// Splits a line of the shape `<blanks>{THEANO,AESARA,PYTENSOR}_{APPLY,SUPPORT}_CODE_SECTION...`.
std::optional<ast::legacy_marker> parse_legacy_marker(std::string_view line);

}  // namespace section::parser
