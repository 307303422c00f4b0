// What the names of an op's C code are to the GIL: Python's and NumPy's C API (which needs it),
// the few of NumPy's accessors that only read an array's fields, what takes or releases the GIL
// itself, and what the C and C++ standard libraries give (none of which calls Python). The
// linker reads an op's code with these (parse/gil_uses) before it runs the code without the GIL.
#pragma once

#include <string_view>

namespace section::c_scan {

enum class NameUse {
  needs_gil,    ///< a function or macro of the API: a call of it needs the GIL
  gil_free,     ///< reads an array's fields (`PyArray_DATA`), or one of NumPy's macros (`NPY_MAX`)
  manages_gil,  ///< releases or takes the GIL itself (`Py_BEGIN_ALLOW_THREADS`, `PyGILState_*`)
  other,        ///< not the API's
};

/// What `name` is to the GIL when called: anything spelt as the API is (`Py*`, `_Py*`, `Npy*`,
/// `npy_Py*`) needs it, unless it is a known accessor.
NameUse python_name_use(std::string_view name);

/// A type or constant of the API (`PyObject`, `PyExc_ValueError`, `Py_None`): named without a
/// call, it needs no GIL (any other name of the API named without a call may be called later).
bool is_api_value(std::string_view name);

/// A function or function-like macro of the C or C++ standard library (math, memory, strings,
/// formatting, time) or a compiler's builtin, none of which calls Python.
bool is_library_function(std::string_view name);

/// A member function of the C++ standard library's containers, strings, atomics and locks.
bool is_library_member(std::string_view name);

/// A type of C, of its standard headers (`size_t`, any `_t`) or, unqualified, of C++'s
/// (`vector`, after `using namespace std`).
bool is_library_type(std::string_view name);

/// A header of the C or C++ standard library, POSIX, the compilers' intrinsics, Python or NumPy,
/// as `#include` names it (`<math.h>`, `"numpy/arrayobject.h"`) or bare (`math.h`).
bool is_library_header(std::string_view header);

}  // namespace section::c_scan
