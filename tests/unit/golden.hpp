// Golden-file comparison shared by the unit tests: compare, or rewrite when
// LIBSECTION_UPDATE_GOLDEN=1 (like doctest's COLLECT mode).
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace golden {

inline std::filesystem::path source_dir() { return LIBSECTION_SOURCE_DIR; }

inline std::string read_file(std::filesystem::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Checks `actual` against the file `expected_path`, reporting the first differing line.
inline void check(std::filesystem::path const& expected_path, std::string const& actual) {
  if (char const* update = std::getenv("LIBSECTION_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  REQUIRE_MESSAGE(
      std::filesystem::exists(expected_path),
      "missing golden file " << expected_path.string() << " (run with LIBSECTION_UPDATE_GOLDEN=1)");
  auto const expected = read_file(expected_path);
  if (expected == actual) return;
  std::istringstream e(expected), a(actual);
  std::string el, al;
  std::size_t line = 1;
  while (true) {
    bool const more_e = static_cast<bool>(std::getline(e, el));
    bool const more_a = static_cast<bool>(std::getline(a, al));
    if (!more_e && !more_a) break;
    if (!more_e || !more_a || el != al) {
      // An assertion, not FAIL_CHECK: doctest's JUnit report (which the pytest run reads)
      // records failed assertions only.
      CHECK_MESSAGE(false, expected_path.string()
                               << ":" << line << ": expected `" << el << "`, got `" << al << "`");
      return;
    }
    ++line;
  }
  CHECK_MESSAGE(false, expected_path.string()
                           << ": files differ in line endings or trailing bytes");
}

}  // namespace golden
