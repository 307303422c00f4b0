// Types and ops written in Python, as the linker core's CType and COp: their `c_*` methods are
// called (with the GIL held) when a module is generated.
#pragma once

#include <pybind11/pybind11.h>

#include "section/ctype.hpp"
#include "section/linker.hpp"
#include "section/linker/generate/module.hpp"

namespace section::python {

/// A type string (`"float64[:]"`), or a Python object with the CType methods
/// (`c_declare(name, sub)`, `c_extract`, ...).
CTypePtr to_type(pybind11::handle value);

/// `to_type` of each of `values`.
std::vector<CTypePtr> to_types(std::vector<pybind11::object> const& values);

/// A Python object with `c_code(name, inputs, outputs, sub)` and optionally the other `c_*`
/// methods of PyTensor's COp, minus their `node` argument.
COpPtr to_op(pybind11::object op);

/// A drop-in node's op: `section` expanded by the linker core, with its flags, and only the
/// `overridden` methods (names of the `c_*` methods above) asked of `python`, an object with
/// those methods minus `node`.
COpPtr dropin_op(SectionOp section, pybind11::object python,
                 std::vector<std::string> const& overridden);

}  // namespace section::python
