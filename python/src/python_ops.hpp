// Types and ops written in Python, as the linker core's CType and COp: their `c_*` methods are
// called (with the GIL held) when a module is generated. A drop-in node's op, and its
// derivatives', are the linker core's, asking Python only for what its class overrides.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "loaded.hpp"
#include "section/ctype.hpp"
#include "section/linker.hpp"
#include "section/linker/generate/module.hpp"

namespace section::python {

/// A type string (`"float64[:]"`), or a Python object with the CType methods
/// (`c_declare(name, sub)`, `c_extract`, ...).
CTypePtr to_type(pybind11::handle value);

/// `to_type` of each of `values`.
std::vector<CTypePtr> to_types(std::vector<pybind11::object> const& values);

/// An op whose code the linker core generates (a drop-in node's, or its derivative's), as
/// `Graph.add_apply` takes it.
struct NodeOp {
  COpPtr op;
};

/// A `NodeOp`'s op, or a Python object with `c_code(name, inputs, outputs, sub)` and optionally
/// the other `c_*` methods of PyTensor's COp, minus their `node` argument, as an op.
COpPtr to_op(pybind11::object op);

/// The op of a drop-in node: the sections of `loaded`, described by `description`, expanded by
/// the linker core with `options`, as `build()`'s are, with `compile_args` added to the build;
/// only the `overridden` methods (names of PyTensor's `c_*` methods) are asked of `python`, an
/// object with those methods minus `node`.
NodeOp dropin_node_op(LoadedSections const& loaded, OpDescription description,
                      ExpandOptions options, std::vector<std::string> compile_args,
                      pybind11::object python, std::vector<std::string> const& overridden);

/// The derivative op of the drop-in node `dropin_node_op`'s arguments make (its `output_types`
/// the node's), from `derivative_spec`'s parts: `mode` ("pullback" or "pushforward"), the
/// inputs `differentiated` marks, the outputs `cotangents` marks, `width` per pass. Raises the
/// Python form of a `LinkError` (a cast that would read dual numbers as plain floats) and
/// `ValueError` for another mode.
NodeOp derivative_node_op(LoadedSections const& loaded, OpDescription description,
                          ExpandOptions options, std::vector<std::string> compile_args,
                          pybind11::object python, std::vector<std::string> const& overridden,
                          std::vector<pybind11::object> const& output_types,
                          std::vector<bool> differentiated, std::vector<bool> cotangents, int width,
                          std::string const& mode);

/// What the files of a drop-in op refuse of its derivatives (`derivative_refusals`) as Python
/// reads it: `{"all": refusal or None, "every": bool, "inputs": {i: refusal}}`, each refusal
/// `{"message", "diagnostics"}`.
pybind11::dict derivative_refusals_record(LoadedSections const& loaded, OpDescription description,
                                          ExpandOptions options,
                                          std::vector<bool> const& differentiated,
                                          std::vector<bool> const& dual_outputs);

}  // namespace section::python
