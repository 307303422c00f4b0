// The C++ parser alone on one file: reading + checks + split into blocks, and the same plus the
// merged section texts. Prints the best of N runs as JSON, for bench_parse.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "section/parse.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: parse_bench FILE [REPEAT]\n");
    return 2;
  }
  std::string const path = argv[1];
  int const repeat = argc > 2 ? std::atoi(argv[2]) : 7;
  double split = 1e9, load = 1e9;
  for (int i = 0; i < repeat; ++i) {
    auto const t0 = std::chrono::steady_clock::now();
    {
      section::SourceManager sm;
      std::vector<section::Diagnostic> diagnostics;
      auto const id = section::read_source(sm, path, path, diagnostics);
      if (!id) return 1;
      auto const parsed = section::parse_file(sm, *id, diagnostics);
      if (parsed.blocks.empty()) return 1;
    }
    auto const t1 = std::chrono::steady_clock::now();
    {
      section::SourceManager sm;
      auto const set = section::load_sections(sm, {{path, path}});
      if (!set.ok()) return 1;
    }
    auto const t2 = std::chrono::steady_clock::now();
    split = std::min(split, std::chrono::duration<double>(t1 - t0).count());
    load = std::min(load, std::chrono::duration<double>(t2 - t1).count());
  }
  std::printf("{\"split_seconds\": %.6f, \"load_seconds\": %.6f}\n", split, load);
  return 0;
}
