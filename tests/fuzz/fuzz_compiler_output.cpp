// libFuzzer target: compiler output (`file:line:col: error: message`), as the linker reads it
// after a failed compile. Any bytes must give diagnostics whose ranges lie inside their file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "linker/compile.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string const log(reinterpret_cast<char const*>(data), size);
  section::SourceManager sm;
  sm.add("op.c", "#section code\nint x;\n\nlong line\n");  // paths naming it resolve here
  for (auto const& d : section::parse_compiler_output(log, sm)) {
    if (!d.range.valid()) continue;
    auto const& text = sm.file(d.range.file).text();
    if (d.range.begin > text.size() || d.range.end > text.size()) std::abort();
    (void)sm.line_column(d.range.file, d.range.begin);
  }
  return 0;
}
