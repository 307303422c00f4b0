// Hover in the language server: what a generated macro under the cursor is.
#pragma once

#include <cstddef>
#include <string_view>

#include "jsonrpc.hpp"
#include "server.hpp"

namespace lint_server {

/// The hover for the word at byte `at` of `text` (the document as `f` linted it): for a macro
/// the expander generates, its family, whether the section there defines it, and its
/// definition for the configured signature; null for any other word.
json macro_hover(Findings const& f, std::string_view text, std::size_t at);

}  // namespace lint_server
