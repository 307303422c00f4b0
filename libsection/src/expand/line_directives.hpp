// Internal: placing a user's section text into generated code, with `#line` directives.
#pragma once

#include <string>

#include "section/expand.hpp"

namespace section::detail {

/// Appends `section`'s text to `out`. With `options.line_directives`, each block's body is
/// preceded by `#line N "file.c"` (N: the line its text starts on) and the whole fragment is
/// followed by `#line M "<resume_file>"` (M: the line of `out` after the directive), which stays
/// unterminated: the caller's next character must be a newline. Returns whether it added that
/// closing directive.
bool append_fragment(std::string& out, SourceManager const& sm, SectionSet const& sections,
                     Section const& section, ExpandOptions const& options);

/// `path` as a C string literal.
std::string c_string_literal(std::string_view path);

}  // namespace section::detail
