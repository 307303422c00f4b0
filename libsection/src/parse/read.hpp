// Internal: reading a file and reporting the OS error number when it cannot be read.
#pragma once

#include <span>
#include <string>
#include <variant>

#include "section/codes.hpp"
#include "section/read.hpp"

namespace section::detail {

/// SL004, which the linter also reports for a folder it cannot list.
extern LintRule const unreadable_file;

/// The rules of reading a file (SL0xx), for the code table.
std::span<LintRule const* const> reading_rules();

/// Why a file could not be read: an OS error number, or 0 when `message` says why.
struct ReadFailure {
  int error = 0;
  std::string message;  ///< lower-case-first, without the path: "no such file or directory"
};

/// The limit on a section file's size: `LIBSECTION_MAX_FILE_BYTES`, else 64 MiB.
std::optional<std::size_t> max_file_bytes(std::string* problem);

/// The bytes of a regular file of at most `max_file_bytes()` bytes. Anything else fails at
/// once, without blocking: a path with a NUL byte, a FIFO, a device, a directory (opened with
/// O_NONBLOCK, then fstat).
std::variant<std::string, ReadFailure> read_regular_file(std::string const& path);

/// `section::read_source`, also storing the errno of a failed read in `*error` (if not null).
std::optional<FileId> read_source(SourceManager& sm, std::string const& path,
                                  std::string const& display_path,
                                  std::vector<Diagnostic>& diagnostics, int* error);

}  // namespace section::detail
