// The NumPy dtypes PyTensor tensors and scalars can have, as the generated macros spell them.
#include <algorithm>
#include <array>

#include "section/dtype.hpp"

namespace section {
namespace {

// NumPy numbers 64-bit integers as `long` where long is 64-bit (LP64) and `long long`
// elsewhere (LLP64 Windows), so their type numbers depend on the platform.
constexpr bool long_is_64_bit = sizeof(long) == 8;

std::array<DtypeInfo, 14> const dtypes = {{
    {"bool", "npy_bool", 0, 1},
    {"int8", "npy_int8", 1, 1},
    {"uint8", "npy_uint8", 2, 1},
    {"int16", "npy_int16", 3, 2},
    {"uint16", "npy_uint16", 4, 2},
    {"int32", "npy_int32", 5, 4},
    {"uint32", "npy_uint32", 6, 4},
    {"int64", "npy_int64", long_is_64_bit ? 7 : 9, 8},
    {"uint64", "npy_uint64", long_is_64_bit ? 8 : 10, 8},
    {"float32", "npy_float32", 11, 4},
    {"float64", "npy_float64", 12, 8},
    {"complex64", "npy_complex64", 14, 8},
    {"complex128", "npy_complex128", 15, 16},
    {"float16", "npy_float16", 23, 2},
}};

}  // namespace

std::optional<DtypeInfo> dtype_info(std::string const& name) {
  auto it = std::find_if(dtypes.begin(), dtypes.end(),
                         [&](DtypeInfo const& d) { return d.name == name; });
  if (it == dtypes.end()) return std::nullopt;
  return *it;
}

std::span<DtypeInfo const> known_dtypes() { return dtypes; }

}  // namespace section
