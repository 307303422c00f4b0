// Internal: reading a file and reporting the OS error number when it cannot be read.
#pragma once

#include "section/parse.hpp"

namespace section::detail {

/// `section::read_source`, also storing the errno of a failed read in `*error` (if not null).
std::optional<FileId> read_source(SourceManager& sm, std::string const& path,
                                  std::string const& display_path,
                                  std::vector<Diagnostic>& diagnostics, int* error);

}  // namespace section::detail
