// Internal: placing a user's section text into generated code, with `#line` directives.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "section/expand.hpp"

namespace section::detail {

/// The file name `#line` gives the generated lines of `method`'s string:
/// `<libsection-generated> c_code`.
std::string generated_file(ExpandOptions const& options, std::string_view method);

/// `#line N "path"`, without a newline.
std::string line_directive(std::size_t line, std::string_view path);

/// Appends `section`'s text to `out`, the string of `method`. With `options.line_directives`,
/// each block's body is preceded by `#line N "file.c"` (N: the line its text starts on) and
/// the whole fragment is followed by `#line M "<generated_file>"` (M: the line of `out` after
/// the directive), which stays unterminated: the caller's next character must be a newline.
/// Returns whether it added that closing directive.
bool append_fragment(std::string& out, SourceManager const& sm, SectionSet const& sections,
                     Section const& section, ExpandOptions const& options, std::string_view method);

/// `path` as a C string literal.
std::string c_string_literal(std::string_view path);

/// The path of a line that is a `#line N "path"` directive as `line_directive` writes it (or
/// indented); nothing for any other line.
std::optional<std::string> line_directive_path(std::string_view line);

}  // namespace section::detail
