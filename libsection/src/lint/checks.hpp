// section-lint internals: the view of a parsed file the rule families share, and their entry
// points.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parse/c_tokens.hpp"
#include "parse/declarations.hpp"
#include "section/expand.hpp"
#include "section/lint.hpp"
#include "section/parse.hpp"

namespace section::lint_detail {

// The rules read section bodies through the C scanner of the parse layer.
using c_scan::Comment;
using c_scan::Declaration;
using c_scan::Directive;
using c_scan::file_scope_declarations;
using c_scan::match_brackets;
using c_scan::Token;
using c_scan::tokenize;
using c_scan::TokenizedBody;
using c_scan::TokenKind;

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

/// `s` in backquotes, as messages quote names of code.
inline std::string backquoted(std::string_view s) {
  std::string out(1, '`');
  out.append(s);
  out += '`';
  return out;
}

FileView make_file_view(SourceManager const& sm, ParsedFile const& parsed);

/// One use of a generated macro in a section of a known tag.
struct MacroUse {
  std::string_view name;
  GeneratedMacro macro;
  std::string_view tag;
  SourceRange range;
  bool in_scope;  ///< whether the expander defines it in that section
};

/// Calls `visit` for every use of a generated macro in `file`, in file order.
void for_each_macro_use(FileView const& file, std::function<void(MacroUse const&)> const& visit);

// Rule families. Each appends what it finds; selection and suppressions are applied afterwards.
// Each file defines its rules beside its checks and lists them for the code table.
void check_structure(FileView const& file, std::vector<Diagnostic>& out);       // SL2xx
void check_macro_scope(FileView const& file, std::vector<Diagnostic>& out);     // SL301–SL304
void check_macro_typos(FileView const& file, std::vector<Diagnostic>& out);     // SL305
void check_apply_specific(FileView const& file, std::vector<Diagnostic>& out);  // SL4xx
void check_control_flow(FileView const& file, std::vector<Diagnostic>& out);    // SL5xx
/// SL601: input/output macros, in sections that define them, beyond the op's arity.
void check_io_arity(FileView const& file, OpDescription const& op, std::vector<Diagnostic>& out);
/// SL602–SL604 over all files of one op (the main function may live in any of them).
void check_signature(std::span<FileView const> files, OpDescription const& op,
                     std::vector<Diagnostic>& out);
std::span<LintRule const* const> structure_rules();
std::span<LintRule const* const> macro_scope_rules();
std::span<LintRule const* const> macro_typo_rules();
std::span<LintRule const* const> apply_specific_rules();
std::span<LintRule const* const> control_flow_rules();
std::span<LintRule const* const> signature_rules();
std::span<LintRule const* const> suppression_rules();

/// The language a `// section-lint: language[c]` (or `[c++]`) comment of `file` declares: the
/// first one, wherever it is; nothing when there is none.
std::optional<Language> declared_language(FileView const& file);

/// Applies `// section-lint: ignore[...]` and `ignore-file[...]` comments of `file` to
/// `diagnostics` (those of that file), and reports unused or malformed ones (SL9xx).
void apply_suppressions(SourceManager const& sm, FileView const& file,
                        RuleSelection const& selection, std::vector<Diagnostic>& diagnostics);

}  // namespace section::lint_detail
