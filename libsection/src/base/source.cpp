// Source files: newline normalisation and line/column lookup.
#include "section/source.hpp"

#include <algorithm>
#include <cstring>

namespace section {

bool normalise_newlines(std::string& text) {
  auto const first_cr = text.find('\r');
  if (first_cr == std::string::npos) return false;
  std::size_t out = first_cr;
  for (std::size_t in = first_cr; in < text.size(); ++in) {
    char c = text[in];
    if (c == '\r') {
      c = '\n';
      if (in + 1 < text.size() && text[in + 1] == '\n') ++in;  // CRLF: one LF
    }
    text[out++] = c;
  }
  text.resize(out);
  return true;
}

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {}

void SourceFile::index_lines() const {
  if (!line_starts_.empty()) return;
  line_starts_.push_back(0);
  char const* const base = text_.data();
  char const* p = base;
  char const* const end = base + text_.size();
  while (p < end) {
    auto const* nl = static_cast<char const*>(std::memchr(p, '\n', end - p));
    if (!nl) break;
    line_starts_.push_back(static_cast<std::size_t>(nl + 1 - base));
    p = nl + 1;
  }
}

std::size_t SourceFile::line_count() const {
  index_lines();
  return line_starts_.size();
}

LineColumn SourceFile::line_column(std::size_t offset) const {
  index_lines();
  offset = std::min(offset, text_.size());
  auto const it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  auto const line = static_cast<std::size_t>(it - line_starts_.begin());  // >= 1
  return {line, offset - line_starts_[line - 1] + 1};
}

std::size_t SourceFile::line_start(std::size_t line) const {
  index_lines();
  if (line == 0) return 0;
  return line <= line_starts_.size() ? line_starts_[line - 1] : text_.size();
}

std::string_view SourceFile::line_text(std::size_t offset) const {
  auto const begin = line_start(line_column(offset).line);
  auto end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  return std::string_view(text_).substr(begin, end - begin);
}

FileId SourceManager::add(std::string path, std::string text) {
  files_.push_back(std::make_unique<SourceFile>(std::move(path), std::move(text)));
  return static_cast<FileId>(files_.size() - 1);
}

}  // namespace section
