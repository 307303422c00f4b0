// The linker core's errors in Python: `LinkError` (a ValueError) and `CompileError` (a
// RuntimeError), with their diagnostics; an op input of the wrong kind is a TypeError.
#pragma once

#include <pybind11/pybind11.h>

#include "section/linker.hpp"

namespace section::python {

/// Adds `LinkError` and `CompileError` to `m`, and translates a `LinkError` (or the cache's
/// `CacheError`) thrown where no SourceManager is at hand (a corrupt cache, a missing compiler).
void add_link_errors(pybind11::module_& m);

/// Raises the Python form of `e`, its diagnostics resolved against `sm`.
[[noreturn]] void raise_python(LinkError const& e, SourceManager const& sm);

}  // namespace section::python
