// Where an op's C code needs the GIL, and whether it may run without it at all. The linker
// (linker/generate/gil.cpp) runs an op's code with the GIL released and takes it back around
// each call of Python's or NumPy's API this scan lists, unless the scan finds something it
// cannot classify: a call of a function the op's code does not define (a library's, through a
// pointer), a header it cannot read, code that takes or releases the GIL itself.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace section::c_scan {

/// One of an op's texts that may run without the GIL, and where it stands in a module: at file
/// scope (support code), among a struct's members, or as statements of a function (its code).
struct GilText {
  enum class Scope { file, members, statements };
  std::string_view text;
  Scope scope = Scope::file;
  /// libsection's own text: its calls of the API are wrapped as any text's, but nothing in it
  /// keeps the GIL (it calls Python only through the API; a call the scan cannot see through,
  /// such as an X-macro's parameter, is its own code's).
  bool library = false;
};

/// A call that needs the GIL: `[begin, end)` of `texts[text]`, from the callee's name (or the
/// `::` before it) to its `)`. A call inside another one is not listed: it runs inside it.
struct GilCall {
  std::size_t text = 0;
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// Why the code must keep the GIL: `why`, at offset `at` of `texts[text]` (`text` is
/// `no_text` for a header of `headers`, which names it).
struct GilKeep {
  static constexpr std::size_t no_text = static_cast<std::size_t>(-1);
  std::size_t text = no_text;
  std::size_t at = 0;
  std::string why;
};

struct GilUses {
  std::vector<GilCall> calls;  ///< in the order of `texts`, then of their offsets
  /// The first reason, in the order of `texts` and offsets (the headers' last); nothing: the
  /// code may run without the GIL, taking it back around `calls`.
  std::optional<GilKeep> keep;
};

/// Reads `texts` (an op's code and support code, all that may run while its code runs) and
/// `headers` (what its module includes for it: `<math.h>`, `"x.h"`, or a bare name).
/// Linear in the texts' size; accepts any text.
GilUses find_gil_uses(std::span<GilText const> texts, std::span<std::string const> headers);

}  // namespace section::c_scan
