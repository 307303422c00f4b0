// AST of one marker-looking line, as the X3 grammar splits it; every part is a raw range.
#pragma once

#include <boost/range/iterator_range.hpp>

namespace section::parser::ast {

using text = boost::iterator_range<char const*>;

/// `<indent>#<gap_after_hash><keyword><gap_before_tag><tag><trailing>`, e.g. `#section code`.
struct section_marker {
  text indent, hash, gap_after_hash, keyword, gap_before_tag, tag, trailing;
};

/// `<indent><prefix><kind>_CODE_SECTION<trailing>`, e.g. `PYTENSOR_APPLY_CODE_SECTION`.
struct legacy_marker {
  text indent, prefix, kind, trailing;
};

}  // namespace section::parser::ast
