// section-lint's output formats for CI services that libsection's renderers do not cover, in the
// shape ruff gives them: GitLab Code Quality reports and JUnit XML.
#pragma once

#include <string>
#include <vector>

#include "section/diagnostic.hpp"

namespace lint_formats {

/// A GitLab Code Quality report: a JSON array of issues with `check_name`, `description`
/// (`CODE: message`), `severity` (info, minor, major), `fingerprint` (stable across runs, unique
/// within the report) and `location {path, lines {begin, end}}`. Paths are relative to
/// $CI_PROJECT_DIR when it is set, as GitLab needs them, else as given.
std::string render_gitlab(std::vector<section::Diagnostic> const& ds,
                          section::SourceManager const& sm);

/// JUnit XML: one `<testsuite>` per file, one failing `<testcase>` per finding (a single
/// passing one when there are none).
std::string render_junit(std::vector<section::Diagnostic> const& ds,
                         section::SourceManager const& sm);

}  // namespace lint_formats
