// libFuzzer target: the ELF reader that lists a compiled library's undefined symbols. The
// library is the compiler's output in the cache, but the reader must hold whatever the bytes:
// never read outside the image, never crash, only refuse.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "section/platform.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string_view const image(reinterpret_cast<char const*>(data), size);
  auto const undefined = section::platform::undefined_symbols(image);
  if (undefined)
    for (auto const& name : *undefined)
      if (name.size() > size) std::abort();  // a name comes from the image
  return 0;
}
