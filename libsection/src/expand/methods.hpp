// Internal: where the expander stores each method's string.
#pragma once

#include <string>
#include <string_view>

#include "section/expand.hpp"

namespace section::detail {

/// The member of `e` holding the string of the method that pastes section `tag`; nullptr for
/// `init_code` (a list) and `code` (optional).
std::string* method_text(Expansion& e, std::string_view tag);

}  // namespace section::detail
