// Parsing section files: split `#section <tag>` files into blocks and merge them into sections.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "section/diagnostic.hpp"
#include "section/read.hpp"
#include "section/source.hpp"

namespace section {

/// The nine section tags, in the order the reference documents them.
inline constexpr std::array<std::string_view, 9> section_tags = {
    "init_code",          "init_code_apply",     "init_code_struct",    "support_code",
    "support_code_apply", "support_code_struct", "cleanup_code_struct", "code",
    "code_cleanup"};

/// One of `section_tags`, or of the extra tags an op's base class declares (Theano's
/// `CGpuKernelBase` adds `kernels`).
bool is_section_tag(std::string_view tag, std::vector<std::string> const& extra_tags = {});

/// The sections whose text is declarations at file scope: `support_code`, `support_code_apply`.
bool is_file_scope_tag(std::string_view tag);

/// The sections that are members, initialisation and cleanup of the op's instance struct
/// (`support_code_struct`, `init_code_struct`, `cleanup_code_struct`).
bool is_struct_tag(std::string_view tag);

/// The sections that may declare the op's main function (`func_name`): the file-scope ones and
/// `support_code_struct`, whose members `run()` belongs with.
bool may_declare_main_function(std::string_view tag);

/// Whether `line` looks like a section marker, well formed or not (the parser reports a near
/// miss): after blanks, `#`, blanks and `section` in any case; or a legacy `*_CODE_SECTION` line.
bool looks_like_marker(std::string_view line);

/// The closest known tag to a misspelled one, if any is close enough to suggest.
std::optional<std::string_view> suggest_tag(std::string_view tag);

/// Which marker syntax a file uses.
enum class MarkerStyle {
  none,     ///< no marker at all
  section,  ///< `#section <tag>` lines
  legacy,   ///< `{THEANO,AESARA,PYTENSOR}_{APPLY,SUPPORT}_CODE_SECTION` lines
  mixed,    ///< both (an error)
};

/// One marker line and the text it introduces.
struct Block {
  std::string tag;        ///< `support_code_apply` for a legacy `*_APPLY_CODE_SECTION` marker
  SourceRange marker;     ///< the marker line, without its newline
  SourceRange tag_range;  ///< the tag inside the marker line
  SourceRange body;       ///< from the `\n` ending the marker line up to the next marker or EOF
  std::size_t marker_line = 0;  ///< 1-based line of the marker; the body's text starts on the next
};

/// A file split into blocks, in file order.
struct ParsedFile {
  FileId file = no_file;
  MarkerStyle style = MarkerStyle::none;
  SourceRange prelude;  ///< text before the first marker (must be whitespace for `section` files)
  std::vector<Block> blocks;
};

/// Splits one file. Problems go to `diagnostics`; the split is always returned, so a linter can
/// go on with what was understood.
ParsedFile parse_file(SourceManager const& sm, FileId file, std::vector<Diagnostic>& diagnostics,
                      std::vector<std::string> const& extra_tags = {});

/// A merged section: every block of one tag across all files, in order.
struct Section {
  std::string tag;
  std::string text;           ///< the reference's `code_sections[tag]`
  std::vector<Block> blocks;  ///< the blocks whose bodies make up `text`
};

/// The error the reference loader raises for the same input: an `OSError` (errno set) or a
/// `ValueError` with this exact message.
struct LoadError {
  int os_errno = 0;
  std::string message;
  std::string path;  ///< for OS errors: the file
};

/// What `load_sections` found in a set of files.
struct SectionSet {
  std::vector<FileId> files;      ///< in the order given (files that could not be read are absent)
  std::vector<Section> sections;  ///< in order of first appearance, like the reference's dict
  std::vector<Diagnostic> diagnostics;
  std::optional<LoadError> error;  ///< set exactly when the reference loader would raise

  Section const* find(std::string_view tag) const;
  bool ok() const { return !error; }
};

/// One input to `load_sections`: where to read it and what to call it in messages.
struct SourceSpec {
  std::string path;
  std::string display_path;  ///< defaults to `path` when empty
};

/// Loads and merges files with the reference `load_c_code` semantics: repeated tags concatenate
/// in order within and across files, legacy markers assign, both styles together are an error.
/// `extra_tags` are accepted besides the nine.
SectionSet load_sections(SourceManager& sm, std::vector<SourceSpec> const& files,
                         std::vector<std::string> const& extra_tags = {});

/// Merges files already in `sm` (see `add_source`), with the same semantics.
SectionSet merge_sections(SourceManager const& sm, std::vector<FileId> const& files,
                          std::vector<Diagnostic> diagnostics = {},
                          std::vector<std::string> const& extra_tags = {});

}  // namespace section
