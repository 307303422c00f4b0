// `Batched`: a CompiledOp run over a batch in one C loop (its module's batch entry, batch.c),
// called from Python, natively from Numba and the JAX handler, and by PyTensor's VM.
#pragma once

#include <pybind11/pybind11.h>

namespace section::python {

/// Adds the `Batched` type to `m`.
void add_batched_op_type(pybind11::module_& m);

/// Whether `op` is a `Batched`.
bool is_batched_op(pybind11::handle op);

/// `native_entry` of a `Batched`: its entries take the inputs with their batch dimensions and
/// give (or, the second, write into) the outputs with theirs.
pybind11::tuple batched_native_entry(pybind11::handle op);

}  // namespace section::python
