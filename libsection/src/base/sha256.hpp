// Internal: SHA-256, for the content hashes the reference uses (ParamsType names, cache versions).
#pragma once

#include <string>
#include <string_view>

namespace section::detail {

/// Lower-case hex SHA-256 of `data` (what Python's `hashlib.sha256(data).hexdigest()` returns).
std::string sha256_hex(std::string_view data);

}  // namespace section::detail
