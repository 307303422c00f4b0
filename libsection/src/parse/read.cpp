// Reading section files: existence, binary data, UTF-8 validity, BOM, newline normalisation.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/utf8.hpp"
#include "parse/read.hpp"
#include "section/codes.hpp"
#include "section/settings.hpp"

namespace section {

namespace detail {

// The rules of this file, each beside its check; the code table (lint/registry.cpp) lists
// them from reading_rules().

constexpr LintRule invalid_utf8{
    .code = "SL001",
    .name = "invalid-utf8",
    .severity = Severity::error,
    .summary = "the file is not valid UTF-8",
    .documentation = R"md(## What it does
Reports the first byte that is not part of a valid UTF-8 sequence, with its byte offset.

## Why is this bad?
PyTensor reads section files with `encoding="utf-8"` and raises `UnicodeDecodeError`; the op
cannot be loaded. Nothing else in the file is checked.

## Example
A file saved as Latin-1 with `// café` in a comment.

## Use instead
Re-save the file as UTF-8.
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule utf8_bom{
    .code = "SL002",
    .name = "utf8-bom",
    .severity = Severity::warning,
    .summary = "the file starts with a UTF-8 byte order mark",
    .documentation = R"md(## What it does
Reports a UTF-8 byte order mark (U+FEFF) at the start of the file.

## Why is this bad?
The reference loaders keep the BOM as text, so a marker on the first line is not at the start
of its line: the file fails with "Stray code before first #section statement" or "No valid
section marker was found".

## Example
A file saved by an editor set to "UTF-8 with BOM".

## Use instead
Save as UTF-8 without a BOM (the fix removes the three bytes).
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule binary_file{
    .code = "SL003",
    .name = "binary-file",
    .severity = Severity::warning,
    .summary = "the file contains NUL bytes",
    .documentation = R"md(## What it does
Reports a NUL byte, the sign of a binary file (an object file, an image) given as a section file.

## Why is this bad?
A C compiler rejects the text, and the file is almost certainly not the one meant.

## Example
`section-lint build/` over a folder holding compiled `*.o` files renamed `*.c`.

## Use instead
Point the op (or `section-lint`) at the C source.
)md",
    .reported_by = Reporter::parser,
};

constexpr LintRule unreadable_file{
    .code = "SL004",
    .name = "unreadable-file",
    .severity = Severity::error,
    .summary = "the file cannot be read",
    .documentation = R"md(## What it does
Reports a path that does not exist, is a directory given where a file was expected, or
cannot be opened (permissions), with the system's reason.

## Why is this bad?
The reference loader raises `FileNotFoundError` (or another `OSError`) when the op is created.

## Example
`func_files = ["vectorTimesVector.c"]` while the file is named `vector_times_vector.c`.

## Use instead
Fix the path; relative paths are relative to the op class's own Python file.
)md",
    .reported_by = Reporter::parser,
};

std::span<LintRule const* const> reading_rules() {
  static constexpr LintRule const* rules[] = {&invalid_utf8, &utf8_bom, &binary_file,
                                              &unreadable_file};
  return rules;
}

}  // namespace detail

namespace {

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

// Offset in the normalised text of a byte offset in the raw text (each CRLF lost one byte).
std::size_t normalised_offset(std::string_view raw, std::size_t raw_offset) {
  std::size_t removed = 0;
  for (std::size_t i = 0; i + 1 < raw_offset && i + 1 < raw.size(); ++i)
    if (raw[i] == '\r' && raw[i + 1] == '\n') ++removed;
  return raw_offset - removed;
}

Diagnostic read_error(std::string const& display_path, detail::ReadFailure const& failure,
                      int* error_out) {
  if (error_out) *error_out = failure.error;
  return make_diagnostic(detail::unreadable_file,
                         "cannot read '" + display_path + "': " + failure.message);
}

std::string lower_first(std::string what) {
  if (!what.empty()) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  return what;
}

detail::ReadFailure os_failure(int error) { return {error, lower_first(std::strerror(error))}; }

char const* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string too_large(std::size_t size, std::size_t limit, bool at_least) {
  return std::string("the file is ") + (at_least ? "more than " : "") + std::to_string(size) +
         " bytes, over the limit of " + std::to_string(limit) +
         " bytes for a section file (LIBSECTION_MAX_FILE_BYTES changes it)";
}

}  // namespace

std::optional<std::size_t> detail::max_file_bytes(std::string* problem) {
  try {
    return max_file_bytes_setting();
  } catch (SettingsError const& e) {
    if (problem) *problem = e.what();
    return std::nullopt;
  }
}

// Regular files are mapped and copied once (no zero-filled buffer, no second copy through
// stdio); those whose size the kernel does not report (/proc) are read in chunks, up to the limit.
std::variant<std::string, detail::ReadFailure> detail::read_regular_file(std::string const& path) {
  // Python's open() refuses these too; the C library would silently read a shorter path.
  if (path.find('\0') != std::string::npos) return ReadFailure{0, "the path contains a NUL byte"};
  std::string problem;
  auto const limit = max_file_bytes(&problem);
  if (!limit) return ReadFailure{0, problem};
  // O_NONBLOCK: opening a FIFO without a writer must not wait; fstat then refuses it.
  int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return os_failure(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_failure(errno);
  if (S_ISDIR(st.st_mode)) return os_failure(EISDIR);
  if (!S_ISREG(st.st_mode))
    return ReadFailure{0, std::string(file_kind(st.st_mode)) +
                              ", not a regular file; section files must be regular files"};
  auto const size = static_cast<std::size_t>(st.st_size);
  if (size > *limit) return ReadFailure{0, too_large(size, *limit, false)};
  if (size > 0) {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (map != MAP_FAILED) {
      std::string text(static_cast<char const*>(map), size);
      ::munmap(map, size);
      return text;
    }
  }
  std::string text;
  char chunk[65536];
  while (true) {
    auto const n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_failure(errno);
    }
    if (n == 0) return text;
    if (text.size() + static_cast<std::size_t>(n) > *limit)
      return ReadFailure{0, too_large(*limit, *limit, true)};
    text.append(chunk, static_cast<std::size_t>(n));
  }
}

std::optional<FileId> add_source(SourceManager& sm, std::string text,
                                 std::string const& display_path,
                                 std::vector<Diagnostic>& diagnostics) {
  auto const bad = find_invalid_utf8(text);
  auto const nul = text.find('\0');
  std::string raw;
  if (bad) raw = text;  // offsets in messages refer to the bytes as they are on disk
  normalise_newlines(text);
  auto const id = sm.add(display_path, std::move(text));

  if (bad) {
    auto const at = normalised_offset(raw, bad->offset);
    auto d =
        make_diagnostic(detail::invalid_utf8,
                        "invalid UTF-8 (in file " + display_path + "): can't decode byte " +
                            hex_byte(static_cast<unsigned char>(raw[bad->offset])) +
                            " at byte offset " + std::to_string(bad->offset) + ": " + bad->reason,
                        {id, at, at + 1});
    d.notes.push_back({"section files are read as UTF-8; re-save the file as UTF-8", {}});
    diagnostics.push_back(std::move(d));
    return std::nullopt;
  }
  auto const& stored = sm.file(id).text();
  if (nul != std::string::npos) {
    auto const at = stored.find('\0');
    diagnostics.push_back(make_diagnostic(detail::binary_file,
                                          "file contains a NUL byte at byte offset " +
                                              std::to_string(nul) +
                                              "; it looks like binary data, not C source",
                                          {id, at, at + 1}));
  }
  if (stored.starts_with("\xEF\xBB\xBF")) {
    auto d = make_diagnostic(detail::utf8_bom,
                             "file starts with a UTF-8 byte order mark (U+FEFF); the reference "
                             "loaders read it as text, so the first line is not a section marker",
                             {id, 0, 3});
    d.fix = FixIt{"remove the byte order mark", {id, 0, 3}, "", Applicability::safe};
    diagnostics.push_back(std::move(d));
  }
  return id;
}

std::optional<FileId> read_source(SourceManager& sm, std::string const& path,
                                  std::string const& display_path,
                                  std::vector<Diagnostic>& diagnostics) {
  return detail::read_source(sm, path, display_path, diagnostics, nullptr);
}

std::optional<FileId> detail::read_source(SourceManager& sm, std::string const& path,
                                          std::string const& display_path,
                                          std::vector<Diagnostic>& diagnostics, int* error) {
  auto read = read_regular_file(path);
  if (auto const* failure = std::get_if<ReadFailure>(&read)) {
    diagnostics.push_back(read_error(display_path, *failure, error));
    return std::nullopt;
  }
  return add_source(sm, std::move(std::get<std::string>(read)), display_path, diagnostics);
}

}  // namespace section
