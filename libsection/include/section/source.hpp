// Source files held in memory: texts normalised to LF, byte-offset ranges, line/column lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace section {

/// Index of a file inside a `SourceManager`.
using FileId = std::uint32_t;
inline constexpr FileId no_file = static_cast<FileId>(-1);

/// A half-open byte range `[begin, end)` in one file's normalised text.
struct SourceRange {
  FileId file = no_file;
  std::size_t begin = 0;
  std::size_t end = 0;

  bool valid() const { return file != no_file; }
  friend bool operator==(SourceRange const&, SourceRange const&) = default;
};

/// A 1-based line and column. Columns count bytes of the UTF-8 text, as clang and gcc do.
struct LineColumn {
  std::size_t line = 1;
  std::size_t column = 1;
};

/// One file's text, newline-normalised exactly as Python's universal newlines do
/// (CRLF and lone CR become LF), so offsets, lines and hashes match the reference loaders.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text);

  std::string const& path() const { return path_; }
  std::string const& text() const { return text_; }

  LineColumn line_column(std::size_t offset) const;
  /// Offset of the first byte of a 1-based line (the text size when past the end).
  std::size_t line_start(std::size_t line) const;
  /// The text of the line holding `offset`, without its newline.
  std::string_view line_text(std::size_t offset) const;
  std::size_t line_count() const;

 private:
  void index_lines() const;

  std::string path_;
  std::string text_;
  mutable std::vector<std::size_t> line_starts_;  // built on first lookup
};

/// Owns every file a run looks at; ranges and diagnostics refer to files by `FileId`.
class SourceManager {
 public:
  FileId add(std::string path, std::string text);
  SourceFile const& file(FileId id) const { return *files_.at(id); }
  std::size_t size() const { return files_.size(); }

  LineColumn line_column(FileId id, std::size_t offset) const {
    return file(id).line_column(offset);
  }

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

/// Replaces CRLF and lone CR by LF (Python's `newline=None` reading). Returns true if any changed.
bool normalise_newlines(std::string& text);

}  // namespace section
