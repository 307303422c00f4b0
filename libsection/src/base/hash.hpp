// Internal: content hashes (SHA-256) for module names, cache keys, ParamsType names and cache
// versions. Every caller stores or compares the hex text, so its format never changes.
#pragma once

#include <string>
#include <string_view>

namespace section::detail {

/// Lower-case hex SHA-256 of `data` (what Python's `hashlib.sha256(data).hexdigest()` returns).
std::string sha256_hex(std::string_view data);

}  // namespace section::detail
