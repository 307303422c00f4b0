// Functions that C code calls through a pointer (CPython's slots, PyTensor's VM, Numba's
// compiled code, the JAX handler): a C++ exception leaving one would unwind into C frames,
// which aborts the process (`terminate called after throwing ...`). `c_entry<f>` is `f` with
// every C++ exception turned into the Python error C callers expect.
#pragma once

#include <pybind11/pybind11.h>

#include <new>
#include <type_traits>

namespace section::python {

/// Sets the Python error of the C++ exception being handled (call it in a `catch`): a pybind11
/// error is restored as it was raised (a KeyboardInterrupt stays one), `bad_alloc` is a
/// MemoryError, any other a RuntimeError with its message.
inline void set_error_of_current_exception() noexcept {
  try {
    throw;
  } catch (pybind11::error_already_set& e) {
    e.restore();
  } catch (pybind11::builtin_exception& e) {
    e.set_error();
  } catch (std::bad_alloc const&) {
    PyErr_NoMemory();
  } catch (std::exception const& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_SystemError, "libsection: an unknown C++ exception");
  }
}

template <auto Function>
struct CEntry;

template <class Result, class... Args, Result (*Function)(Args...)>
struct CEntry<Function> {
  /// `Function(args...)`; if it throws, its failure value (NULL, -1) with the Python error
  /// set, or for a function returning nothing (a destructor), the error reported as
  /// unraisable.
  static Result call(Args... args) noexcept {
    try {
      return Function(args...);
    } catch (...) {
      set_error_of_current_exception();
      if constexpr (std::is_void_v<Result>) PyErr_WriteUnraisable(nullptr);
      else if constexpr (std::is_pointer_v<Result>) return nullptr;
      else return Result(-1);
    }
  }
};

/// `Function` as a C caller may call it: no C++ exception leaves it.
template <auto Function>
inline constexpr auto c_entry = &CEntry<Function>::call;

}  // namespace section::python
