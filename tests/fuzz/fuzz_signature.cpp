// libFuzzer target: signature strings (`--inputs`, `--outputs`, `--params`, build()'s types).
// Bad strings must throw signature_error and nothing else.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "section/signature.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  std::string_view const text(reinterpret_cast<char const*>(data), size);
  try {
    for (auto const& t : section::parse_type_list(text, "input")) {
      (void)t.to_string();
      (void)t.pytensor_str();
      (void)section::parse_type(t.to_string());  // what it prints must read back
    }
  } catch (section::signature_error const&) {
  }
  try {
    auto fields = section::parse_params(text);
    (void)section::params_spec(std::move(fields));
  } catch (section::signature_error const&) {
  }
  return 0;
}
