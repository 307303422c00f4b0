// The compile-flag decisions a module's text and flags allow: whether it may leave C++17's
// special math functions out of its prelude, and whether GCC may compile it as a whole program;
// and which of its flags a precompiled header must share.
#include "linker/build/flags.hpp"

#include <algorithm>
#include <set>

#include "parse/c_tokens.hpp"

namespace section {

namespace {

/// The names <cmath> declares only with the special math functions (each also with a suffix
/// `f` and `l`), the GNU extensions beside them, and the macros that tell whether they are there.
bool names_special_math(std::string_view name) {
  static std::set<std::string_view> const names = {
      "assoc_laguerre", "assoc_legendre", "beta",         "comp_ellint_1", "comp_ellint_2",
      "comp_ellint_3",  "cyl_bessel_i",   "cyl_bessel_j", "cyl_bessel_k",  "cyl_neumann",
      "ellint_1",       "ellint_2",       "ellint_3",     "expint",        "hermite",
      "laguerre",       "legendre",       "riemann_zeta", "sph_bessel",    "sph_legendre",
      "sph_neumann",    "airy_ai",        "airy_bi",      "conf_hyperg",   "hyperg"};
  if (name == "__STDCPP_MATH_SPEC_FUNCS__" || name == "__STDCPP_WANT_MATH_SPEC_FUNCS__")
    return true;
  if (names.count(name)) return true;
  return (name.back() == 'f' || name.back() == 'l') && names.count(name.substr(0, name.size() - 1));
}

/// Whether `#include <header>` is one that cannot use the special math functions: the C and
/// C++ standard libraries', POSIX's, Python's and NumPy's (already in the prelude).
bool standard_header(std::string_view header) {
  static std::set<std::string_view> const names = {
      // C, and the C headers of POSIX a module may use
      "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h", "iso646.h",
      "limits.h", "locale.h", "math.h", "setjmp.h", "signal.h", "stdalign.h", "stdarg.h",
      "stdatomic.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "stdnoreturn.h",
      "string.h", "tgmath.h", "threads.h", "time.h", "uchar.h", "wchar.h", "wctype.h", "unistd.h",
      "pthread.h", "fcntl.h", "dlfcn.h", "strings.h", "alloca.h", "Python.h", "pyconfig.h",
      // C++
      "cassert", "ccomplex", "cctype", "cerrno", "cfenv", "cfloat", "cinttypes", "ciso646",
      "climits", "clocale", "cmath", "csetjmp", "csignal", "cstdalign", "cstdarg", "cstdbool",
      "cstddef", "cstdint", "cstdio", "cstdlib", "cstring", "ctgmath", "ctime", "cuchar", "cwchar",
      "cwctype", "algorithm", "any", "array", "atomic", "barrier", "bit", "bitset", "charconv",
      "chrono", "codecvt", "compare", "complex", "concepts", "condition_variable", "coroutine",
      "deque", "exception", "execution", "filesystem", "format", "forward_list", "fstream",
      "functional", "future", "initializer_list", "iomanip", "ios", "iosfwd", "iostream", "istream",
      "iterator", "latch", "limits", "list", "locale", "map", "memory", "memory_resource", "mutex",
      "new", "numbers", "numeric", "optional", "ostream", "queue", "random", "ranges", "ratio",
      "regex", "scoped_allocator", "semaphore", "set", "shared_mutex", "source_location", "span",
      "sstream", "stack", "stdexcept", "stop_token", "streambuf", "string", "string_view",
      "syncstream", "system_error", "thread", "tuple", "type_traits", "typeindex", "typeinfo",
      "unordered_map", "unordered_set", "utility", "valarray", "variant", "vector", "version"};
  return names.count(header) || header.rfind("sys/", 0) == 0 || header.rfind("numpy/", 0) == 0;
}

/// The header `<header>` that what follows an include directive's name names; "?" for
/// anything else (a "file" of the op's, a macro).
std::string_view included_header(std::string_view rest) {
  auto const open = rest.find_first_not_of(" \t");
  auto const close = rest.find('>');
  if (open == std::string_view::npos || rest[open] != '<' || close == std::string_view::npos)
    return "?";
  return rest.substr(open + 1, close - open - 1);
}

bool is_include(c_scan::Directive const& d) {
  return d.name == "include" || d.name == "include_next" || d.name == "import";
}

/// Where a directive's text past its name starts.
std::size_t past_name(std::string_view text, c_scan::Directive const& d) {
  return d.name.empty() ? d.begin + 1
                        : static_cast<std::size_t>(d.name.data() - text.data()) + d.name.size();
}

/// Whether `named` holds for an identifier of `body` (`text` tokenized) or of a directive past
/// its name (a macro's body, a condition), not for one in a comment or a literal, nor in an
/// include's header name (a `#line`'s path is a literal).
template <class Named>
bool names_any(std::string_view text, c_scan::TokenizedBody const& body, Named named) {
  auto in = [&](c_scan::TokenizedBody const& scanned) {
    for (auto const& t : scanned.tokens)
      if (t.kind == c_scan::TokenKind::identifier && named(text.substr(t.begin, t.end - t.begin)))
        return true;
    return false;
  };
  if (in(body)) return true;
  for (auto const& d : body.directives)
    if (!is_include(d) && in(c_scan::tokenize(text, past_name(text, d), d.end))) return true;
  return false;
}

/// Whether a flag includes a file: code the module's checks cannot read.
bool includes_a_file(std::vector<std::string> const& compile_args) {
  return std::any_of(compile_args.begin(), compile_args.end(), [](std::string const& a) {
    return a.rfind("-include", 0) == 0 || a.rfind("-imacros", 0) == 0;
  });
}

}  // namespace

bool may_use_special_math(std::string_view text, std::vector<std::string> const& compile_args) {
  if (includes_a_file(compile_args)) return true;
  if (text.size() > c_scan::max_tokenized_bytes) return true;
  auto const body = c_scan::tokenize(text, 0, text.size());
  // A header outside the standard ones may call one.
  for (auto const& d : body.directives) {
    std::size_t const after_name = past_name(text, d);
    if (is_include(d) &&
        !standard_header(included_header(text.substr(after_name, d.end - after_name))))
      return true;
  }
  // Names in comments and literals call nothing: an input labelled "beta" in a message, or a
  // comment, leaves the module lean.
  return names_any(text, body, names_special_math);
}

bool whole_program_text(std::string_view text) {
  if (text.size() > c_scan::max_tokenized_bytes) return false;
  return !names_any(text, c_scan::tokenize(text, 0, text.size()), [](std::string_view name) {
    return name == "asm" || name == "__asm" || name == "__asm__" || name == "visibility" ||
           name == "__visibility__" || name == "externally_visible";
  });
}

void decide_compile_flags(ModuleSource& module) {
  if (module.language == Language::cxx && !may_use_special_math(module.text, module.compile_args))
    module.compile_args.push_back(no_special_math_flag);
  // A static library could call back into a function of the op's (BLAS's `xerbla_`, say),
  // which -fwhole-program would hide from it: only modules linking none. LTO decides for
  // itself, and a file a flag includes is code this cannot read.
  std::string users_code;
  for (auto const& s : module.member.support) users_code += s + "\n";
  bool const flags_decide =
      includes_a_file(module.compile_args) ||
      std::any_of(module.compile_args.begin(), module.compile_args.end(),
                  [](std::string const& a) { return a.rfind("-flto", 0) == 0; });
  module.whole_program = module.libraries.empty() && !flags_decide &&
                         whole_program_text(users_code + module.member.body);
}

std::vector<std::string> header_flags(std::vector<std::string> const& compile_args) {
  std::vector<std::string> out;
  for (auto const& a : compile_args)
    if (a.rfind("-m", 0) == 0 || a.rfind("-f", 0) == 0 || a.rfind("-O", 0) == 0 ||
        a.rfind("-g", 0) == 0 || a.rfind("-std=", 0) == 0 || a == no_special_math_flag)
      out.push_back(a);
  return out;
}

}  // namespace section
