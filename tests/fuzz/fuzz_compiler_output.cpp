// libFuzzer target: compiler output (`file:line:col: error: message`), as the linker reads it
// after a failed compile, and what the failure's message tells of it. Any bytes must give
// diagnostics (and notes) whose ranges lie inside their file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "linker/build/compile.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string const log(reinterpret_cast<char const*>(data), size);
  section::SourceManager sm;
  sm.add("op.c", "#section code\nint x;\n\nlong line\n");  // paths naming it resolve here
  auto const sources = section::compiled_sources(
      "#line 1 \"op.c\"\n  if (APPLY_SPECIFIC(f)(V1, &V2) != 0) {\nint y;\n", "gen.cpp", sm);
  auto diagnostics = section::parse_compiler_output(log, sm);
  // What a failed compile tells of them reads the same untrusted messages.
  (void)section::explain_compile_errors(diagnostics, sm, sources, size % 2 == 0);
  auto const check = [&](section::SourceRange const& r) {
    if (!r.valid()) return;
    auto const& text = sm.file(r.file).text();
    if (r.begin > text.size() || r.end > text.size()) std::abort();
    (void)sm.line_column(r.file, r.begin);
  };
  for (auto const& d : diagnostics) {
    check(d.range);
    for (auto const& n : d.notes) check(n.range);
  }
  return 0;
}
