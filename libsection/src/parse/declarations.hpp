// What a block of file-scope C/C++ declares (functions, globals, types), by name, and the
// parameters of the op's main function as its files write them: the linter checks the main
// function with it, the linker reads its parameters.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parse/c_tokens.hpp"
#include "section/parse.hpp"

namespace section::c_scan {

struct Declaration {
  enum class Kind { function_definition, function_declaration, variable, type };
  Kind kind;
  std::string name;  ///< `foo`, or the whole macro call for built names: `APPLY_SPECIFIC(foo)`
  std::size_t name_begin;
  std::size_t name_end;
  bool apply_specific;  ///< the name is built with `APPLY_SPECIFIC(...)`
  bool macro_built;     ///< the name is built by some other macro: nothing can be said about it
  std::optional<std::size_t> parameter_count;  ///< functions
  std::size_t parameters_begin = 0;            ///< the parameter list, parentheses included
  std::size_t parameters_end = 0;
};

/// The declarations at file (or struct-member) scope of a token stream, in order. A heuristic
/// reader: what it cannot make sense of (macro soup, odd declarators) it skips silently.
std::vector<Declaration> file_scope_declarations(std::string_view text,
                                                 std::span<Token const> tokens);

/// The op's main function as its declarations name it: `func_name` without blanks
/// (`APPLY_SPECIFIC( f )` declares `APPLY_SPECIFIC(f)`).
std::string main_function_name(std::string_view func_name);

/// The file-scope declarations and definitions of the function `name` (`main_function_name`)
/// among `tokens` of `text`, in order.
std::vector<Declaration> functions_named(std::string_view text, std::span<Token const> tokens,
                                         std::string_view name);

/// One parameter of a C function as written: its text, whether it is a pointer or array, and
/// whether its type is plainly a number (a typedef may hide a pointer, so only these count).
struct WrittenParameter {
  std::string text;
  bool pointer = false;
  bool number = false;
  bool type_seen = false;
  /// The name it declares: its last identifier (`PyArrayObject ** z` → `z`).
  std::string name() const;
};

/// The parameters between the parentheses of the function declaration `decl` in `text`, split
/// at the top-level commas.
std::vector<WrittenParameter> written_parameters(std::string_view text, Declaration const& decl);

/// The parameters of the op's main function `func_name` as a support section of `sections`
/// (in `sm`'s files) declares or defines it; nothing when none does (a header may declare it:
/// the compiler then has the last word).
std::optional<std::vector<WrittenParameter>> main_function_parameters(SourceManager const& sm,
                                                                      SectionSet const& sections,
                                                                      std::string const& func_name);

/// For each token index: the index of its matching bracket (`()`, `[]`, `{}`), or
/// `tokens.size()` for an unmatched opener; non-brackets map to themselves.
std::vector<std::uint32_t> match_brackets(std::string_view text, std::span<Token const> tokens);

}  // namespace section::c_scan
