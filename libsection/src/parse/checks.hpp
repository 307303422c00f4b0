// The parser's judging pass: every diagnostic about what the scan found, and the one error the
// reference loader raises, derived from those diagnostics.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "parse/scan.hpp"
#include "section/codes.hpp"

namespace section::detail {

/// Judges one file: its near misses, marker styles, stray code, tags, empty and repeated
/// sections, in that order.
void check_file(SourceManager const& sm, ScannedFile const& file,
                std::vector<std::string> const& extra_tags, std::vector<Diagnostic>& out);

/// Judges files together, after check_file judged each alone (what it reported is
/// `diagnostics` from `judged_from` on): marker styles across files, and no sections at all.
void check_files(std::vector<ScannedFile> const& files, std::vector<Diagnostic>& diagnostics,
                 std::size_t judged_from);

/// The error the reference loader raises, derived from what the checks reported (`judged`,
/// in the order check_file and check_files report). None when they found no error.
std::optional<LoadError> reference_error(SourceManager const& sm,
                                         std::vector<ScannedFile> const& files,
                                         std::span<Diagnostic const> judged);

/// A `code` section in an op that also names a main function (SL604): the reference
/// `ExternalCOp.c_code` fails. Reported by the expander and by the linter, at `code_marker`.
Diagnostic code_section_conflict(SourceRange code_marker, std::string_view func_name);

/// The rules of the judging pass (SL1xx, SL2xx and SL604), for the code table.
std::span<LintRule const* const> judging_rules();

}  // namespace section::detail
