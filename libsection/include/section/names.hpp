// Names that end up in generated C/C++ source: the one place they are checked, wherever they
// enter (Python API, command-line tools, the linker), so no caller can inject code through them.
#pragma once

#include <optional>
#include <string_view>

#include "section/signature.hpp"

namespace section {

/// `[A-Za-z_][A-Za-z0-9_]*`.
bool is_c_identifier(std::string_view name);

/// Throws `signature_error` ("params field `a;}`: not a C identifier ...") unless `name` is a
/// C identifier. `what` says what the name is, e.g. "params field".
void check_c_identifier(std::string_view name, std::string_view what);

/// Throws `signature_error` unless `func_name` is something the generated call
/// `func_name(args)` can name: an identifier, a qualified one (`ns::f`), or one macro call of
/// either (`APPLY_SPECIFIC(f)`), blanks allowed around the parts.
void check_func_name(std::string_view func_name);

/// Throws `signature_error` unless `name` (an op name, a label: shown in comments and string
/// literals of generated source, and in messages) is 1 to `max_display_name` bytes of valid
/// UTF-8 without control characters or backslashes (a `\` ending a `//` comment would continue
/// it onto the next line of code).
void check_display_name(std::string_view name, std::string_view what);
inline constexpr std::size_t max_display_name = 256;

/// Throws `signature_error` unless `header` (an op's or a type's `c_headers` entry, written as
/// `#include <header>`, or as it is when it starts with `<` or `"`) is one well-formed header
/// name: `<x>`, `"x"` or a bare `x`, at most `max_display_name` bytes, with no control
/// character, no backslash (which would splice the next line into the directive), and no
/// second bracket or quote. `what` says whose header it is.
void check_header_name(std::string_view header, std::string_view what);

/// Throws `signature_error` unless `count` (`_cop_num_inputs`/`_cop_num_outputs`: how many
/// arguments the generated call is padded to) is nothing or 0 to `max_padded_arguments`.
void check_padding(std::optional<int> count, std::string_view what);
inline constexpr int max_padded_arguments = 1024;

}  // namespace section
