"""Batched drop-in ops in PyTensor: ``vectorize_graph``, ``pt.vectorize``, ``Blockwise`` and
PyMC's vectorized graphs run the op's C code over the batch in one C loop, in every backend.

PyTensor vectorizes an op by wrapping it in ``Blockwise``. Whatever made the ``Blockwise``
(``vectorize_graph``, ``pt.vectorize``, a gradient's own batched nodes, PyMC's
``vectorize_over_posterior``, a user), a rewrite in every mode's rewrite database
(``libsection_batched``, after the graph's other rewrites) puts a ``BatchedOp`` in its place
when the core op is a drop-in op without a Python ``perform`` of its own (a ``perform`` that
only raises is none) and its core node's types are tensors (a PyTensor scalar has no batch
entry: ``Blockwise`` runs such a node per element): the same inputs,
outputs, shapes and gradient (``Blockwise``'s), and a thunk that runs the node's ``_core.Batched``
(python/libsection/_batched.py): PyTensor's VM calls it natively (CVM), the Python linker once
per batch (FAST_COMPILE), Numba's code once per batch (NUMBA), and JAX through the op's XLA FFI
call, whose handler runs the vmapped batch in the same C loop (JAX).
"""

from __future__ import annotations

import numpy as np
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor.blockwise import Blockwise

from . import _backends, _batched
from ._node import BuiltByTheCore, compile_node, make_thunk, store
from ._protocol import (
    PerNode,
    blockwise_batch_ndim,
    blockwise_core_node,
    call_infer_shape,
    gradient_method,
    tensors_only,
)
from ._traceback import entry_point

__all__ = ["BatchedOp", "register"]


class BatchedOp(Op):
    """``Blockwise(core_op, signature)`` whose batch runs in one C loop (or, for a core op with
    ``vmap_method = "broadcast_all"``, in one call of its C code): the node a drop-in op's
    ``Blockwise`` becomes when a function is compiled."""

    __props__ = ("core_op", "signature")

    def __init__(self, core_op, signature: str):
        self.core_op = core_op
        self.signature = signature
        self.blockwise = Blockwise(core_op, signature)  # its shapes, gradient and checks

    def make_node(self, *inputs):
        node = self.blockwise.make_node(*inputs)
        return Apply(self, node.inputs, [o.type() for o in node.outputs])

    def infer_shape(self, *args):  # (node, shapes) since PyTensor 3.3, (fgraph, ...) before
        return self.blockwise.infer_shape(*args)

    def connection_pattern(self, node):
        return self.blockwise.connection_pattern(node)

    def __str__(self):
        return f"Batched{{{self.core_op}, {self.signature}}}"

    def core_node(self, node):
        """The node of the core op that one row of ``node`` is."""
        return blockwise_core_node(self.blockwise, node)

    def batched(self, node):
        """A fresh ``_core.Batched`` of ``node`` (its own compiled instance, so its own struct)."""
        batch_ndim = blockwise_batch_ndim(self.blockwise, node)
        masks = [
            sum(1 << d for d, b in enumerate(v.type.broadcastable[:batch_ndim]) if b)
            for v in node.inputs
        ]
        core_node = self.core_node(node)
        return _batched.batched(
            compile_node(core_node),
            self.plan_signature(core_node),
            type(self.core_op).__name__,
            whole=_batched.vmap_method(self.core_op) == "broadcast_all",
            masks=masks,
        )

    def plan_signature(self, core_node) -> str:
        """The signature, with each output dimension it leaves open that the core op's
        ``infer_shape`` (or the output's static shape) ties to an input's dimension or fixes:
        then the outputs are made before the first row, and an empty batch has its shape."""
        inputs, outputs = _batched.parse_signature(self.signature)
        named = {d for dims in inputs for d in dims}
        if all(d in named or d.isdigit() for dims in outputs for d in dims):
            return self.signature
        symbolic = [tuple(v.shape[k] for k in range(v.type.ndim)) for v in core_node.inputs]
        try:
            shapes = call_infer_shape(core_node, symbolic)
        except Exception:  # no infer_shape, or one for other inputs: the first row tells
            shapes = [(None,) * len(dims) for dims in outputs]
        found = {id(e): inputs[i][k] for i, dims in enumerate(symbolic) for k, e in enumerate(dims)}

        def tied(j, d, name):
            static = core_node.outputs[j].type.shape[d]
            if name in named or name.isdigit() or static is not None:
                return name if static is None else str(static)
            e = shapes[j][d]
            if isinstance(e, (int, np.integer)) or isinstance(getattr(e, "data", None), np.ndarray):
                return str(int(getattr(e, "data", e)))
            return found.get(id(e), name)

        tied_outputs = [
            [tied(j, d, name) for d, name in enumerate(dims)] for j, dims in enumerate(outputs)
        ]
        return _batched.format_signature(inputs, tied_outputs)

    @entry_point
    def perform(self, node, inputs, output_storage):
        store(_performed(node)(*inputs), output_storage)

    @entry_point
    def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
        """The node's own ``Batched``, run on the VM's storage: natively through ``cthunk``
        (CLinker's convention) in the C VM, through the Python thunk otherwise."""
        batched = self.batched(node)
        thunk = make_thunk(batched, node, storage_map, compute_map)
        if impl != "py":
            thunk.cthunk = batched.cthunk(thunk.inputs, thunk.outputs)
        return thunk


# The gradient is Blockwise's, in the installed PyTensor's name for it.
_GRADIENT = gradient_method()
setattr(BatchedOp, _GRADIENT, lambda self, *args: getattr(self.blockwise, _GRADIENT)(*args))

# The Batched of nodes whose perform was called directly (not through a thunk).
_performed: PerNode = PerNode(lambda node: node.op.batched(node))


def register() -> None:
    """Ops built by libsection's linker core (drop-in ops whose class has no ``perform`` of its
    own, and their derived gradients: a batched op's gradient is its gradient's ``Blockwise``)
    batch in C: the rewrite in every mode's database, and ``BatchedOp`` in the backends that
    convert batched nodes (``_backends.register_batched``: Numba and JAX)."""
    from pytensor.compile import optdb
    from pytensor.graph.rewriting.basic import dfs_rewriter, node_rewriter

    @node_rewriter([Blockwise])
    def libsection_batched(fgraph, node):
        op = node.op
        if type(op) is not Blockwise or op.destroy_map:
            return None
        core = op.core_op
        if not isinstance(core, BuiltByTheCore) or core.runs_own_perform():
            return None
        if not tensors_only(blockwise_core_node(op, node)):
            return None  # no batch entry (a PyTensor scalar): Blockwise runs it per element
        return BatchedOp(op.core_op, op.signature).make_node(*node.inputs).outputs

    # After the graph's own rewrites (and before Numba's Blockwise rewrite, at 100), in the
    # databases of every mode: CVM, FAST_RUN, NUMBA and JAX ("fast_run"), FAST_COMPILE.
    optdb.register(
        "libsection_batched",
        dfs_rewriter(libsection_batched),
        "fast_run",
        "fast_compile",
        position=99,
    )
    _backends.register_batched(BatchedOp)
