// Reading section files into a SourceManager: existence, binary data, UTF-8 validity, BOM,
// newline normalisation. The parser (parse.hpp) works on what this reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "section/diagnostic.hpp"
#include "section/source.hpp"

namespace section {

/// Reads a file from disk into `sm` (as UTF-8, newlines normalised). Reports a missing file, a
/// directory, binary data and invalid UTF-8 (naming the byte offset), and returns no file then.
/// `display_path` is the name used in messages (the path as the user wrote it).
std::optional<FileId> read_source(SourceManager& sm, std::string const& path,
                                  std::string const& display_path,
                                  std::vector<Diagnostic>& diagnostics);

/// Adds in-memory text (e.g. from Python) after the same checks as `read_source`.
std::optional<FileId> add_source(SourceManager& sm, std::string text,
                                 std::string const& display_path,
                                 std::vector<Diagnostic>& diagnostics);

}  // namespace section
