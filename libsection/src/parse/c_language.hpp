// What a file declared C may not hold: C++-only constructs (SL208) and the struct sections,
// which have no C form (SL209). The linter reports them for `--language c`, the expander for an
// op declared C, so an op is refused before its module is written.
#pragma once

#include <span>
#include <vector>

#include "section/codes.hpp"
#include "section/parse.hpp"

namespace section::detail {

/// Reports the C++-only constructs and the non-blank struct sections of `blocks` (blocks of
/// other tags than the nine, such as Theano's `kernels`, are not C and are skipped).
void check_c_language(SourceManager const& sm, std::span<Block const> blocks,
                      std::vector<Diagnostic>& out);

/// SL208 and SL209, for the code table.
std::span<LintRule const* const> c_language_rules();

}  // namespace section::detail
