// `--fix` writes a file only if it is still the text that was linted: the user may be editing
// it meanwhile, and an edit must never be lost.
#pragma once

#include <string>

namespace lint_replace {

/// Replaces the file at `path` (a link's target, not the link) by `fixed` if its text, read
/// as the linter reads it (newlines normalised), is still `linted`: a new file is written
/// beside it and renamed over it after a last check that the file is the one read, unchanged,
/// so an edit made meanwhile is never overwritten. Keeps the file's newlines (its first
/// line's: CRLF, CR or LF) and its mode (and its owner where permitted). Returns why the
/// file was left as it is, or an empty string once replaced.
std::string replace_if_unchanged(std::string const& path, std::string const& linted,
                                 std::string const& fixed);

/// A unified diff of `before` → `after` as one hunk around the changed lines (`--diff`).
std::string unified_diff(std::string const& path, std::string const& before,
                         std::string const& after);

}  // namespace lint_replace
