// Where LSP meets the text: `file://` URIs and positions (lines and UTF-16 code units), for the
// language server (server.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "jsonrpc.hpp"

namespace lint_server {

/// `file:///a%20b/op.c` → `/a b/op.c`; another scheme is kept whole (linted under that name).
std::string path_of(std::string const& uri);

/// `/a b/op.c` → `file:///a%20b/op.c` (the inverse of `path_of`).
std::string uri_of(std::string const& path);

/// A byte offset of `text` as an LSP position (line, UTF-16 code units).
json position(std::string_view text, std::size_t offset);

/// An LSP position as a byte offset of `text` (clamped to the line's end, or the text's).
std::size_t offset_of(std::string_view text, Position const& pos);

/// The bytes `begin`..`end` of `text` as an LSP range.
json lsp_range(std::string_view text, std::size_t begin, std::size_t end);

}  // namespace lint_server
