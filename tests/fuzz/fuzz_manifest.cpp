// libFuzzer target: a cache entry's manifest.json (read from a cache directory, so untrusted).
// parse() must never throw; what it accepts must write back to text that reads as the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "section/linker/cache/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string_view const text(reinterpret_cast<char const*>(data), size);
  auto const read = section::ModuleManifest::parse(text);
  if (read.manifest.has_value() == (read.problem.kind != section::ManifestProblem::Kind::none))
    std::abort();  // exactly one of a manifest and a problem
  if (!read.manifest) return 0;
  std::string const written = read.manifest->to_json();
  auto const again = section::ModuleManifest::parse(written);
  if (!again.manifest || again.manifest->to_json() != written) std::abort();
  return 0;
}
