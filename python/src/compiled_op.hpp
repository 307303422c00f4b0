// `CompiledOp`, the C-implemented callable over one instance of a loaded module: its vectorcall
// runs the module's `run` directly; PyTensor's VM (`cthunk`) and Numba (`native_entry`) call it
// without the Python call protocol.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loader.hpp"

namespace section::python {

/// What an output must be when a call hands it back: an array of this NumPy type number and
/// number of dimensions (`ndim` -1: not checked, as for scalars, whose C code converts them).
struct DeclaredOutput {
  int typenum = 0;
  int ndim = -1;
  std::string type;  ///< as written in signatures, `float64[:]`, for messages
};

/// Adds the `CompiledOp` type to `m`.
void add_compiled_op_type(pybind11::module_& m);

/// A new instance of `library`'s module. Its storage cells: one per input and output (the
/// caller's one-element lists when `storage` is given, shared), then one per constant, holding
/// its value. `info` is what `CompiledOp.info` returns; `name` names it in messages. An op on
/// its own cells gets spare instances for threads that find it busy, unless it is a `spare`.
/// Each call checks its outputs against `declared` (one per output, or empty: unchecked).
pybind11::object new_compiled_op(LoadedLibrary const& library, std::size_t n_inputs,
                                 std::size_t n_outputs,
                                 std::vector<pybind11::object> const& constants,
                                 std::optional<std::vector<pybind11::object>> const& storage,
                                 pybind11::dict info, std::string const& name,
                                 std::vector<DeclaredOutput> declared = {}, bool spare = false);

/// (entry address, op address, inputs, outputs): what compiled code needs to call `op`
/// natively. The caller keeps `op` alive while the addresses are in use.
pybind11::tuple native_entry(pybind11::handle op);

/// Moves the exception set into a C thunk's error list `[type, value, traceback]` (CLinker's
/// layout, which PyTensor's VM reads after a thunk failed).
void move_error_to_vm(PyObject* error);

/// (inputs, outputs) of `op` when it is a CompiledOp whose module has a batch entry; nothing
/// otherwise (not a CompiledOp, or an input or output that cannot take a batch's rows).
std::optional<std::pair<Py_ssize_t, Py_ssize_t>> batch_entry_of(pybind11::handle op);

/// Runs `op` (a CompiledOp with a batch entry: `batch_entry_of`) over a batch, taking its
/// instance as a call does (its lock, or a spare): `plan` and `labels` as batch.c reads them,
/// `outputs` NULL or an array to write into, each, and new references on success. 0, or -1
/// with an exception set.
int run_batch(PyObject* op, PyObject* const* inputs, PyObject** outputs, long long const* plan,
              char const* const* labels);

}  // namespace section::python
