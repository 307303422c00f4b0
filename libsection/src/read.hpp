// Internal: reading a file and reporting the OS error number when it cannot be read.
#pragma once

#include "section/parse.hpp"

namespace section::detail {

struct Utf8Error {
  std::size_t offset;
  char const* reason;  // Python's wording, so users recognise it
};

/// The first invalid sequence, judged as Python's strict decoder does (no overlongs, no
/// surrogates, nothing above U+10FFFF).
std::optional<Utf8Error> find_invalid_utf8(std::string_view s);

/// `section::read_source`, also storing the errno of a failed read in `*error` (if not null).
std::optional<FileId> read_source(SourceManager& sm, std::string const& path,
                                  std::string const& display_path,
                                  std::vector<Diagnostic>& diagnostics, int* error);

}  // namespace section::detail
