// The parser's first pass: finding markers, near misses and blocks. It judges nothing; the
// checks (checks.hpp) turn what it found into diagnostics.
#pragma once

#include <string>
#include <vector>

#include "section/parse.hpp"

namespace section::detail {

/// The reference quotes user text in full; beyond this, a message quotes the start only.
inline constexpr std::size_t max_quoted_bytes = 1000;

enum class MarkerKind { section, legacy };

/// A line that looks like a marker but is not one.
struct NearMiss {
  MarkerKind kind;
  SourceRange line;
  std::vector<std::string> why;  ///< what is wrong, in the order a user would fix it
  std::string marker;            ///< the line as it should be written
};

/// One file split into blocks, with what the checks need besides.
struct ScannedFile {
  ParsedFile parsed;
  std::vector<MarkerKind> block_kinds;  ///< the marker kind of each of `parsed.blocks`
  std::vector<NearMiss> near_misses;    ///< in file order
};

ScannedFile scan_file(SourceManager const& sm, FileId file);

}  // namespace section::detail
