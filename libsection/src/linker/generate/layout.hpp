// Internal: the layout every module shares (module.cpp writes one graph's, layout.cpp lays out
// several graphs as one).
#pragma once

#include <string>
#include <vector>

#include "section/linker/generate/module.hpp"

namespace section {

/// What a support text of libsection's own that belongs at file scope starts with (the derived
/// gradient's number types, which add their math functions to namespace `std`). In a module of
/// several graphs it goes once before the graphs, not into a graph's namespace, where its
/// `namespace std` would hide the real one from the graph's code.
inline constexpr char const* file_scope_marker = "// libsection: file scope\n";

/// Adds `item` unless it is empty or already there: the first occurrence of each string is
/// kept (as PyTensor keeps support code).
void add_unique(std::vector<std::string>& list, std::string const& item);

/// `text` inside a C string literal of the generated code: quotes and backslashes escaped, and
/// `%` dropped (the literals are also `printf`-style formats).
std::string escape_for_c_string(std::string const& text);

/// What a module of one graph or several starts with (`what` names its ops in its first line):
/// the prelude, the export macros, the include lines and the runtime's table, then the support
/// code.
std::string module_head(std::string const& what, Language language,
                        std::vector<std::string> const& includes,
                        std::vector<std::string> const& support);

/// What a module of one graph or several ends with: the library's own entry points.
std::string module_entry_points();

}  // namespace section
