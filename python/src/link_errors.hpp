// The linker core's errors in Python: `LinkError` (a ValueError) and `CompileError` (a
// RuntimeError), with their diagnostics; an op input of the wrong kind is a TypeError.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "section/linker.hpp"

namespace section::python {

/// Adds `LinkError` and `CompileError` to `m`, and translates a `LinkError` (or the cache's
/// `CacheError`) thrown where no SourceManager is at hand (a corrupt cache, a missing compiler).
void add_link_errors(pybind11::module_& m);

/// Raises the Python form of `e`, its diagnostics resolved against `sm`.
[[noreturn]] void raise_python(LinkError const& e, SourceManager const& sm);

/// One error of an expansion: its diagnostic's code (`SL604`) and message.
struct ExpansionError {
  std::string code, message;
};

/// Raises what a drop-in op's `c_*` methods raise, as PyTensor's `ExternalCOp`'s do, for an
/// expansion of `op_name` with `errors`: `ValueError` with their messages, unless one is SL604
/// (a `func_name` padded to fewer slots than the inputs); then, when `c_code` is asked and the
/// expansion has none (`code_missing`), `AssertionError` with SL604's message, else
/// `NotImplementedError`. Returns when there is nothing to raise. Both routes of a drop-in op
/// raise through it: the linker core's (`DropInOp`) and its Python methods (PyTensor's CLinker).
void raise_expansion_errors(std::string const& op_name, std::vector<ExpansionError> const& errors,
                            bool code_missing);

}  // namespace section::python
