// section-lint: rules over section files, their documentation, suppressions and rule selection,
// plus the SARIF and GitHub renderers the linter adds to those of render.hpp.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "section/codes.hpp"
#include "section/diagnostic.hpp"
#include "section/op.hpp"
#include "section/source.hpp"

namespace section {

/// Every diagnostic code, sorted by code: the code table `--explain`, `--list-rules`, SARIF and
/// the documentation read. Each code is defined beside the check that reports it; the table is
/// assembled from each stage's list of them (lint/registry.cpp).
std::span<DiagnosticCode const> diagnostic_codes();
DiagnosticCode const* find_diagnostic_code(std::string_view code);

/// Every rule (the `SL` codes of the code table), sorted by code.
std::span<LintRule const> lint_rules();
LintRule const* find_lint_rule(std::string_view code);

/// Which codes are reported, from `--select`/`--ignore` code prefixes (`SL3`, `SL301`, `SL`).
/// The longest matching prefix decides; on a tie `ignore` wins. Nothing selected means all.
class RuleSelection {
 public:
  RuleSelection() = default;
  /// Throws `std::invalid_argument` naming a prefix that matches no rule.
  RuleSelection(std::vector<std::string> select, std::vector<std::string> ignore);

  bool enabled(std::string_view code) const;

 private:
  std::vector<std::string> select_;
  std::vector<std::string> ignore_;
};

struct LintOptions {
  RuleSelection selection;
  /// The op the files implement, as far as it is known: the signature checks (SL6xx) read its
  /// `inputs`/`outputs` (their number), `has_params` and `func_name`; with `language` C, the
  /// files are checked as C (SL208, SL209); `differentiated`, values hidden from derivatives
  /// are reported (SL306).
  OpDescription op;
  /// Section tags accepted besides the nine, as an op's base class declares them (Theano's
  /// `CGpuKernelBase` adds `kernels`). Their text is not checked as C.
  std::vector<std::string> extra_sections;
};

/// Lints in-memory text as one file named `display_path`. Never throws on any input.
std::vector<Diagnostic> lint_text(SourceManager& sm, std::string text,
                                  std::string const& display_path, LintOptions const& options = {});

/// Lints files and folders (every `*.c`/`*.h` below a folder, sorted) as the files of one op:
/// the signature checks that look for the main function look across all of them.
std::vector<Diagnostic> lint_files(SourceManager& sm, std::vector<std::string> const& paths,
                                   LintOptions const& options = {});

/// Whether a folder walk leaves out `path` (a folder: with everything below it).
using SkipPath = std::function<bool(std::filesystem::path const& path, bool is_folder)>;

/// The files `lint_files` looks at: files as given, folders expanded to their sorted
/// `*.c`/`*.h` files (hidden folders and what `skip` names left out). Paths that do not exist
/// are kept, so reading them reports SL004; folders that cannot be listed are reported in
/// `problems` (SL004) when it is given, else kept so that reading them reports it.
std::vector<std::string> collect_lint_paths(std::vector<std::string> const& paths,
                                            std::vector<Diagnostic>* problems = nullptr,
                                            SkipPath const& skip = {});

/// SARIF 2.1.0: one run of `section-lint` with every rule's metadata in `tool.driver.rules`.
/// Columns are reported in Unicode code points (`columnKind`).
std::string render_sarif(std::vector<Diagnostic> const& ds, SourceManager const& sm);

/// GitHub Actions workflow commands (`::error file=…,line=…::message`), one per line; columns
/// are left out for ranges spanning lines.
std::string render_github(std::vector<Diagnostic> const& ds, SourceManager const& sm);

/// A GitLab Code Quality report: a JSON array of issues with `check_name`, `description`
/// (`CODE: message`), `severity` (info, minor, major), `fingerprint` (stable across runs, unique
/// within the report) and `location {path, lines {begin, end}}`. Paths are relative to
/// `project_dir` (GitLab's $CI_PROJECT_DIR) when it is given, as GitLab needs them.
std::string render_gitlab(std::vector<Diagnostic> const& ds, SourceManager const& sm,
                          std::string const& project_dir = {});

/// JUnit XML: one `<testsuite>` per file, one failing `<testcase>` per finding (a single
/// passing one when there are none).
std::string render_junit(std::vector<Diagnostic> const& ds, SourceManager const& sm);

}  // namespace section
