// section-lint internals: the view of a parsed file the rule families share, and their entry points.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lint/c_tokens.hpp"
#include "lint/declarations.hpp"
#include "section/lint.hpp"
#include "section/parse.hpp"

namespace section::lint_detail {

/// One block with its tokens.
struct BlockView {
  Block const& block;
  TokenizedBody body;
};

/// A parsed file as the rules see it.
struct FileView {
  FileId file;
  std::string_view text;
  std::vector<BlockView> blocks;
  TokenizedBody prelude;  ///< text before the first marker (only its comments matter)

  std::string_view spelling(Token const& t) const { return text.substr(t.begin, t.end - t.begin); }
  SourceRange range(Token const& t) const { return {file, t.begin, t.end}; }
};

/// How many inputs (outputs) the op has, when its signature is known.
inline std::optional<std::size_t> arity(std::optional<std::vector<TypeSpec>> const& types) {
  return types ? std::optional<std::size_t>(types->size()) : std::nullopt;
}

FileView make_file_view(SourceManager const& sm, ParsedFile const& parsed);

/// A diagnostic for `code` with the rule's severity.
Diagnostic make_diagnostic(std::string_view code, std::string message, SourceRange range);

// Rule families. Each appends what it finds; selection and suppressions are applied afterwards.
void check_structure(FileView const& file, std::vector<Diagnostic>& out);       // SL2xx
void check_macro_scope(FileView const& file, OpDescription const& op,
                       std::vector<Diagnostic>& out);                          // SL3xx, SL601
void check_apply_specific(FileView const& file, std::vector<Diagnostic>& out);  // SL4xx
void check_control_flow(FileView const& file, std::vector<Diagnostic>& out);    // SL5xx
/// SL602–SL604 over all files of one op (the main function may live in any of them).
void check_signature(std::span<FileView const> files, OpDescription const& op,
                     std::vector<Diagnostic>& out);

/// Applies `// section-lint: ignore[...]` and `ignore-file[...]` comments of `file` to
/// `diagnostics` (those of that file), and reports unused or malformed ones (SL9xx).
void apply_suppressions(SourceManager const& sm, FileView const& file,
                        RuleSelection const& selection, std::vector<Diagnostic>& diagnostics);

// Each family's rule table, for the registry.
std::span<LintRule const> parser_rules();
std::span<LintRule const> structure_rules();
std::span<LintRule const> macro_scope_rules();
std::span<LintRule const> apply_specific_rules();
std::span<LintRule const> control_flow_rules();
std::span<LintRule const> signature_rules();
std::span<LintRule const> suppression_rules();

}  // namespace section::lint_detail
