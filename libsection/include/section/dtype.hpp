// NumPy dtypes as the generated C code sees them.
#pragma once

#include <optional>
#include <span>
#include <string>

namespace section {

/// A NumPy dtype as the generated C code sees it.
struct DtypeInfo {
  std::string name;    ///< `float64`
  std::string c_type;  ///< `npy_float64`
  int typenum = 0;     ///< NumPy type number on this platform (`np.dtype(name).num`)
  int itemsize = 0;
};

/// Looks up a NumPy dtype name (`float64`, `int32`, `bool`, ...); nothing for unknown names.
std::optional<DtypeInfo> dtype_info(std::string const& name);

/// Every dtype `dtype_info` knows (PyTensor's fourteen), in NumPy type-number order.
std::span<DtypeInfo const> known_dtypes();

}  // namespace section
