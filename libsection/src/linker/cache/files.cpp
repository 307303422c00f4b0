// Small file helpers for the linker: whole-file reads and names no other process uses.
#include "linker/cache/files.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <random>

namespace section {

std::optional<std::string> read_file(std::filesystem::path const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return data;
}

std::string unique_name(std::string const& stem) {
  static std::atomic<unsigned> counter{0};
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return stem + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." +
         std::to_string(rng() % 1000000007ULL);
}

}  // namespace section
