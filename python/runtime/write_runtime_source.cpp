// Writes the runtime's source (section::runtime_source) to the file named by its argument, for
// the package build to compile into libsection/_runtime.so: the text stays generated in one
// place, from the prelude every module compiles against.
#include <cstdio>
#include <fstream>

#include "section/linker/generate/module.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.cpp\n", argv[0]);
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << section::runtime_source();
  out.close();
  if (!out) {
    std::fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[1]);
    return 1;
  }
  return 0;
}
