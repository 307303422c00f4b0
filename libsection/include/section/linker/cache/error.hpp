// The cache's own error, so that its files need nothing of the stages that use it: the build
// stage and the Python module report it as they report a link error.
#pragma once

#include <stdexcept>

namespace section {

/// A cache directory, file or lock that cannot be trusted or used, or a malformed cache setting;
/// the message says what and why, and what to do about it.
class CacheError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace section
