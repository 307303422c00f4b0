// Internal: the compile flags the build decides from a module's text and its ops' flags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "section/linker/generate/module.hpp"

namespace section {

/// The compile flag of a C++ module that cannot use C++17's special math functions (see
/// `module_prelude`): no code of it names one, includes a header outside the standard library
/// (which could) or has its flags include a file. Part of the module's key and of its
/// precompiled header's flags.
inline constexpr char const* no_special_math_flag = "-DLIBSECTION_NO_SPECIAL_MATH";

/// Whether a C++ module with this text and these compile flags may use C++17's special math
/// functions (`no_special_math_flag`).
bool may_use_special_math(std::string_view text, std::vector<std::string> const& compile_args);

/// Whether the code of a module (its support code and graph text, not the prelude) leaves
/// every symbol but the entry points to the module: it names no `asm` (which may name a symbol
/// the compiler cannot see used) and sets no `visibility` (a symbol meant to be seen outside).
bool whole_program_text(std::string_view text);

/// The compiler flag of a `ModuleSource::whole_program` module (GCC only; clang ignores it).
inline constexpr char const* whole_program_flag = "-fwhole-program";

/// Adds the flags a written module's text and flags allow (`write_module`): the
/// `no_special_math_flag` of a C++ module that cannot use them, and `whole_program` for a module
/// nothing outside needs a symbol of but its entry points. Part of its key, so decided once, when
/// the module is generated (`generate_module`).
void decide_compile_flags(ModuleSource& module);

/// Of a module's compile arguments, those a precompiled header must share (code generation:
/// `-m*`, `-f*`, `-O*`, `-g*`, `-std=*`) and `no_special_math_flag`, which changes the header's
/// text; other macros, include and warning flags do not matter.
std::vector<std::string> header_flags(std::vector<std::string> const& compile_args);

}  // namespace section
