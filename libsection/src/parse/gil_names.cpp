// The tables of gil_names.hpp: the API's names that need no GIL, what manages the GIL itself,
// and the standard libraries' functions, members, types and headers.
#include "parse/gil_names.hpp"

#include <unordered_set>

namespace section::c_scan {
namespace {

// The tables, several names a line:
// clang-format off

using Names = std::unordered_set<std::string_view>;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Read an array's (or an object's) fields, or compute from them: no Python state is touched,
// so they run in an op's loops without the GIL, as NumPy's own loops use them.
Names const& gil_free_names() {
  static Names const names = {
      "PyArray_DATA", "PyArray_BYTES", "PyArray_DIMS", "PyArray_SHAPE", "PyArray_DIM",
      "PyArray_STRIDES", "PyArray_STRIDE", "PyArray_NDIM", "PyArray_SIZE", "PyArray_NBYTES",
      "PyArray_ITEMSIZE", "PyArray_TYPE", "PyArray_DESCR", "PyArray_DTYPE", "PyArray_FLAGS",
      "PyArray_CHKFLAGS", "PyArray_BASE", "PyArray_GETPTR1", "PyArray_GETPTR2", "PyArray_GETPTR3",
      "PyArray_GETPTR4", "PyArray_GetPtr", "PyArray_IS_C_CONTIGUOUS", "PyArray_IS_F_CONTIGUOUS",
      "PyArray_ISCONTIGUOUS", "PyArray_ISFORTRAN", "PyArray_ISONESEGMENT", "PyArray_ISCARRAY",
      "PyArray_ISCARRAY_RO", "PyArray_ISFARRAY", "PyArray_ISFARRAY_RO", "PyArray_ISALIGNED",
      "PyArray_ISWRITEABLE", "PyArray_ISBEHAVED", "PyArray_ISBEHAVED_RO", "PyArray_ISNOTSWAPPED",
      "PyArray_ISBYTESWAPPED", "PyArray_ISNUMBER", "PyArray_ISINTEGER", "PyArray_ISSIGNED",
      "PyArray_ISUNSIGNED", "PyArray_ISFLOAT", "PyArray_ISCOMPLEX", "PyArray_ISBOOL",
      "PyArray_ISSTRING", "PyArray_ISOBJECT", "PyArray_ISPYTHON", "PyArray_ISFLEXIBLE",
      "PyArray_ISUSERDEF", "PyArray_ISEXTENDED", "PyArray_ISDATETIME", "PyArray_HASFIELDS",
      "PyArray_SAMESHAPE", "PyArray_CompareLists", "PyArray_MultiplyList",
      "PyArray_MultiplyIntList", "PyDataType_ELSIZE", "Py_TYPE", "Py_SIZE", "Py_REFCNT",
      "Py_IS_TYPE", "Py_Is", "Py_IsNone", "Py_IsTrue", "Py_IsFalse", "Py_MIN", "Py_MAX", "Py_ABS",
      "Py_UNUSED", "Py_ARRAY_LENGTH", "Py_CHARMASK", "Py_SAFE_DOWNCAST",
  };
  return names;
}

// Release or take the GIL: an op that does so runs as its author wrote it.
bool manages_gil(std::string_view name) {
  static Names const names = {
      "Py_BEGIN_ALLOW_THREADS", "Py_END_ALLOW_THREADS", "Py_BLOCK_THREADS", "Py_UNBLOCK_THREADS",
      "PyEval_SaveThread", "PyEval_RestoreThread", "PyEval_AcquireThread", "PyEval_ReleaseThread",
      "PyEval_AcquireLock", "PyEval_ReleaseLock", "PyThreadState_Swap", "NPY_ALLOW_C_API",
      "NPY_ALLOW_C_API_DEF", "NPY_DISABLE_C_API",
  };
  return names.count(name) || starts_with(name, "PyGILState_") || starts_with(name, "NPY_BEGIN_") ||
         starts_with(name, "NPY_END_");
}

// The API's types and constants, used without a call.
bool api_value(std::string_view name) {
  static Names const names = {
      "PyObject", "PyVarObject", "PyTypeObject", "Py_ssize_t", "Py_hash_t", "Py_uhash_t",
      "Py_intptr_t", "Py_uintptr_t", "Py_UCS1", "Py_UCS2", "Py_UCS4", "Py_buffer", "Py_complex",
      "Py_None", "Py_True", "Py_False", "Py_Ellipsis", "Py_NotImplemented", "Py_LT", "Py_LE",
      "Py_EQ", "Py_NE", "Py_GT", "Py_GE", "PyObject_HEAD", "PyObject_VAR_HEAD", "PyArray_Descr",
      "PyArray_Dims", "PyArray_Chunk", "PyArray_ArrFuncs", "PyArray_DatetimeMetaData",
      "PyArray_DTypeMeta", "NpyIter", "NpyAuxData",
  };
  return names.count(name) || starts_with(name, "PyExc_") || starts_with(name, "Py_TPFLAGS_") ||
         starts_with(name, "PyBUF_") || ends_with(name, "Object") || ends_with(name, "_Type") ||
         ends_with(name, "Func") || ends_with(name, "_fields") || ends_with(name, "Def") ||
         ends_with(name, "State") || ends_with(name, "_Slot") || ends_with(name, "_Spec") ||
         starts_with(name, "Py_tp_") || starts_with(name, "Py_nb_") ||
         starts_with(name, "Py_sq_") || starts_with(name, "Py_mp_") ||
         starts_with(name, "Py_am_") || starts_with(name, "Py_bf_");
}

bool spelt_as_api(std::string_view name) {
  auto const capital_after = [&](std::size_t at) {
    return name.size() > at && ((name[at] >= 'A' && name[at] <= 'Z') || name[at] == '_');
  };
  return (starts_with(name, "Py") && capital_after(2)) ||
         (starts_with(name, "_Py") && capital_after(3)) ||
         (starts_with(name, "Npy") && capital_after(3)) || starts_with(name, "npy_Py");
}

Names const& math_functions() {
  static Names const names = {
      "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh",
      "sinh", "tanh", "exp", "exp2", "expm1", "exp10", "frexp", "ldexp", "log", "log10", "log1p",
      "log2", "logb", "ilogb", "modf", "scalbn", "scalbln", "cbrt", "fabs", "hypot", "pow",
      "sqrt", "erf", "erfc", "lgamma", "tgamma", "ceil", "floor", "nearbyint", "rint", "lrint",
      "llrint", "round", "lround", "llround", "trunc", "fmod", "remainder", "remquo", "copysign",
      "nan", "nextafter", "nexttoward", "fdim", "fmax", "fmin", "fma", "fpclassify", "isfinite",
      "isinf", "isnan", "isnormal", "signbit", "isgreater", "isgreaterequal", "isless",
      "islessequal", "islessgreater", "isunordered", "abs", "labs", "llabs", "div", "ldiv",
      "lldiv", "sincos", "j0", "j1", "jn", "y0", "y1", "yn", "cabs", "carg", "cexp", "clog",
      "cpow", "csqrt", "creal", "cimag", "conj", "csin", "ccos", "ctan",
  };
  return names;
}

Names const& other_functions() {
  static Names const names = {
      // memory and strings
      "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp",
      "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strspn",
      "strcspn", "strdup", "strndup", "strtok_r", "strerror", "malloc", "calloc", "realloc",
      "free", "aligned_alloc", "posix_memalign", "alloca", "abort", "atoi", "atol", "atoll",
      "atof", "strtod", "strtof", "strtold", "strtol", "strtoll", "strtoul", "strtoull", "qsort",
      "bsearch", "rand", "rand_r", "srand", "getenv",
      // formatting and output
      "printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf", "vsprintf", "vsnprintf",
      "puts", "fputs", "putchar", "fputc", "fflush", "fwrite", "fread", "fopen", "fclose",
      "perror",
      // time and threads
      "clock", "clock_gettime", "time", "nanosleep", "gettimeofday", "usleep", "sleep", "getpid",
      "gettid", "syscall", "pthread_self", "sched_yield", "sched_getcpu", "access",
      // language and compiler
      "va_start", "va_end", "va_arg", "va_copy", "assert", "offsetof", "static_cast",
      "reinterpret_cast", "const_cast", "dynamic_cast",
      // C++'s, unqualified (after `using namespace std`, or found by argument)
      "min", "max", "swap", "move", "forward", "fill", "fill_n", "copy", "copy_n", "sort",
      "stable_sort", "accumulate", "inner_product", "iota", "transform", "for_each",
      "min_element", "max_element", "make_pair", "make_tuple", "get", "tie", "begin", "end",
      "size", "data", "to_string", "make_unique", "make_shared", "numeric_limits", "isless",
      "clamp", "exchange", "lower_bound", "upper_bound", "reverse", "find", "count", "equal",
  };
  return names;
}

Names const& library_types() {
  static Names const names = {
      "FILE", "va_list", "jmp_buf", "div_t", "ldiv_t", "vector", "string", "array", "map", "set",
      "unordered_map", "unordered_set", "pair", "tuple", "complex", "deque", "list", "valarray",
      "unique_ptr", "shared_ptr", "atomic", "mutex", "lock_guard", "unique_lock", "optional",
      "string_view", "numeric_limits", "initializer_list", "function", "span",
  };
  return names;
}

Names const& library_members() {
  static Names const names = {
      "size", "length", "data", "begin", "end", "cbegin", "cend", "rbegin", "rend", "front",
      "back", "at", "push_back", "emplace_back", "pop_back", "push_front", "emplace_front",
      "pop_front", "insert", "emplace", "erase", "clear", "empty", "resize", "reserve",
      "capacity", "shrink_to_fit", "assign", "swap", "fill", "find", "count", "contains",
      "lower_bound", "upper_bound", "equal_range", "c_str", "substr", "append", "compare",
      "replace", "real", "imag", "reset", "release", "load", "store", "exchange", "fetch_add",
      "fetch_sub", "fetch_and", "fetch_or", "compare_exchange_weak", "compare_exchange_strong",
      "lock", "unlock", "try_lock", "join", "detach", "joinable", "value", "value_or",
      "has_value", "top", "push", "pop", "max", "min", "sum", "get", "str",
  };
  return names;
}

Names const& library_headers() {
  static Names const names = {
      // C and POSIX
      "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h",
      "iso646.h", "limits.h", "locale.h", "math.h", "setjmp.h", "signal.h", "stdalign.h",
      "stdarg.h", "stdatomic.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h",
      "stdnoreturn.h", "string.h", "tgmath.h", "time.h", "uchar.h", "wchar.h", "wctype.h",
      "unistd.h", "strings.h", "pthread.h", "sched.h", "alloca.h", "malloc.h", "sys/time.h",
      "sys/types.h", "sys/syscall.h",
      // the compilers' intrinsics
      "immintrin.h", "emmintrin.h", "xmmintrin.h", "pmmintrin.h", "smmintrin.h", "nmmintrin.h",
      "x86intrin.h", "arm_neon.h",
      // C++
      "algorithm", "any", "array", "atomic", "bit", "bitset", "cassert", "cctype", "cerrno",
      "cfenv", "cfloat", "charconv", "chrono", "cinttypes", "climits", "clocale", "cmath",
      "complex", "condition_variable", "cstdarg", "cstddef", "cstdint", "cstdio", "cstdlib",
      "cstring", "ctime", "cwchar", "deque", "exception", "forward_list", "functional",
      "initializer_list", "iomanip", "ios", "iosfwd", "iostream", "istream", "iterator", "limits",
      "list", "map", "memory", "mutex", "new", "numbers", "numeric", "optional", "ostream",
      "queue", "random", "ratio", "set", "span", "sstream", "stack", "stdexcept", "string",
      "string_view", "system_error", "thread", "tuple", "type_traits", "typeinfo",
      "unordered_map", "unordered_set", "utility", "valarray", "variant", "vector",
      // Python and NumPy
      "Python.h", "structmember.h",
  };
  return names;
}

// clang-format on

}  // namespace

NameUse python_name_use(std::string_view name) {
  if (manages_gil(name)) return NameUse::manages_gil;
  if (gil_free_names().count(name)) return NameUse::gil_free;
  if (starts_with(name, "NPY_") || starts_with(name, "PY_") ||
      (starts_with(name, "npy_") && !starts_with(name, "npy_Py")))
    return NameUse::gil_free;
  return spelt_as_api(name) ? NameUse::needs_gil : NameUse::other;
}

bool is_api_value(std::string_view name) { return api_value(name); }

bool is_library_function(std::string_view name) {
  if (math_functions().count(name) || other_functions().count(name)) return true;
  // `expf`, `logl`: the float and long double forms of the math functions.
  if (!name.empty() && (name.back() == 'f' || name.back() == 'l') &&
      math_functions().count(name.substr(0, name.size() - 1)))
    return true;
  return starts_with(name, "__builtin_") || starts_with(name, "__atomic_") ||
         starts_with(name, "__sync_") || starts_with(name, "_mm_") ||
         starts_with(name, "_mm256_") || starts_with(name, "_mm512_");
}

bool is_library_member(std::string_view name) { return library_members().count(name) != 0; }

bool is_library_type(std::string_view name) {
  return library_types().count(name) || (ends_with(name, "_t") && name.size() > 2);
}

bool is_library_header(std::string_view header) {
  if (header.size() >= 2 && (header.front() == '<' || header.front() == '"'))
    header = header.substr(1, header.size() - 2);
  return library_headers().count(header) || starts_with(header, "numpy/");
}

}  // namespace section::c_scan
