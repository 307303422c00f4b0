"""JAX (PyTensor's ``JAX`` mode, and what PyMC's numpyro and blackjax samplers compile) for
drop-in ops.

- Forward: ``jax.pure_callback`` runs the node's compiled instance on the host (or the op's own
  ``perform``, as PyTensor would), one instance per converted function. Output shapes come
  from the outputs' static shapes or, failing that, from the op's ``infer_shape``, evaluated
  once per input-shape signature while JAX traces.
- ``vmap``: ``vmap_method="broadcast_all"``. JAX hands the callback the whole batch at once
  (every input broadcast to the batch shape), and the host loops over the batch elements
  calling the C code: one host round trip per batch instead of one per element
  (``"sequential"``), and no op-specific batching rule needed.
- Gradients: a ``jax.custom_vjp`` whose backward pass is the JAX conversion of the op's own
  PyTensor gradient graph (``pullback``/``L_op``/``grad``, through ``pytensor.gradient.grad``
  with the cotangents as known gradients), rewritten as PyTensor's JAX mode rewrites it.
- ``jax.jit`` traces the callback once per input-shape signature and caches the result.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._node import NodeRunner

__all__ = ["jax_function", "register"]


def register(jax_funcify, op_class, own_perform) -> None:
    """Registers ``op_class`` with PyTensor's ``jax_funcify``; ``own_perform(op)`` tells whether
    the op's class has its own ``perform``."""

    @jax_funcify.register(op_class)
    def _funcify(op, node=None, **kwargs):
        return jax_function(node, own_perform(op))


def _core_ndim(variable) -> int:
    return getattr(variable.type, "ndim", 0)


def jax_function(node, own_perform: bool):
    """A JAX-traceable function of the node's inputs (the output, or a tuple of outputs)."""
    import jax

    op = node.op
    runner = NodeRunner(node, own_perform)  # this function's own struct
    n_out = len(node.outputs)
    core_ndims = [_core_ndim(v) for v in node.inputs]
    out_dtypes = [np.dtype(v.type.dtype) for v in node.outputs]
    destroyed = sorted({i for inputs in getattr(op, "destroy_map", {}).values() for i in inputs})
    output_shapes = _shape_function(node)

    def run_once(arrays):
        for i in destroyed:  # JAX's buffers are not the op's to overwrite
            arrays[i] = np.array(arrays[i])
        results = runner(*arrays)
        results = (results,) if n_out == 1 else results
        return [np.asarray(r, dtype=d) for r, d in zip(results, out_dtypes, strict=True)]

    def host(*arrays):
        """The C code on NumPy arrays; under vmap, every input carries the same leading batch
        dimensions, looped over here."""
        arrays = [np.asarray(a) for a in arrays]
        batch_ndim = max((a.ndim - n for a, n in zip(arrays, core_ndims, strict=True)), default=0)
        if batch_ndim == 0:
            return tuple(run_once(arrays))
        batch_shape = arrays[0].shape[:batch_ndim]  # broadcast_all: the same for every input
        outputs = None
        for index in itertools.product(*map(range, batch_shape)):
            # `...` keeps 0-d elements arrays (a full integer index gives NumPy scalars).
            results = run_once([a[(*index, ...)] for a in arrays])
            if outputs is None:
                outputs = [np.empty(batch_shape + r.shape, r.dtype) for r in results]
            for out, r in zip(outputs, results, strict=True):
                out[index] = r
        if outputs is None:  # an empty batch: element shapes from the shape function
            shapes = output_shapes([a.shape[batch_ndim:] for a in arrays])
            outputs = [
                np.empty(batch_shape + s, d) for s, d in zip(shapes, out_dtypes, strict=True)
            ]
        return tuple(outputs)

    def forward(*xs):
        shapes = output_shapes([tuple(x.shape) for x in xs])
        result = jax.pure_callback(
            host,
            tuple(jax.ShapeDtypeStruct(s, d) for s, d in zip(shapes, out_dtypes, strict=True)),
            *xs,
            vmap_method="broadcast_all",
        )
        return result[0] if n_out == 1 else tuple(result)

    gradient = _Gradient(node)
    function = jax.custom_vjp(forward)

    def forward_keeping(*xs):
        outputs = forward(*xs)
        return outputs, (xs, outputs)

    def backward(residuals, cotangents):
        xs, outputs = residuals
        outputs = (outputs,) if n_out == 1 else outputs
        cotangents = (cotangents,) if n_out == 1 else cotangents
        return gradient(xs, outputs, cotangents)

    function.defvjp(forward_keeping, backward)
    return function


def _integer(dtype) -> bool:
    return not np.issubdtype(np.dtype(dtype), np.inexact)


class _Gradient:
    """The op's PyTensor gradient graph as a JAX function, built on the first backward pass
    (an op without a gradient fails there, with PyTensor's own message)."""

    def __init__(self, node):
        self.node = node
        self.function = None

    def build(self):
        import pytensor.gradient
        from pytensor.compile.mode import get_mode
        from pytensor.graph.fg import FunctionGraph
        from pytensor.graph.replace import graph_replace
        from pytensor.link.jax.dispatch import jax_funcify

        node = self.node
        inputs = [v.type() for v in node.inputs]
        outputs = node.op.make_node(*inputs).outputs
        self.wrt = [i for i, v in enumerate(inputs) if not _integer(v.type.dtype)]
        self.known = [j for j, v in enumerate(outputs) if not _integer(v.type.dtype)]
        cotangents = [outputs[j].type() for j in self.known]
        grads = pytensor.gradient.grad(
            cost=None,
            wrt=[inputs[i] for i in self.wrt],
            known_grads=dict(zip([outputs[j] for j in self.known], cotangents, strict=True)),
            disconnected_inputs="ignore",
            return_disconnected="zero",
        )
        # The backward pass gets the forward outputs: use them rather than running the op again.
        free_outputs = [o.type() for o in outputs]
        grads = graph_replace(grads, dict(zip(outputs, free_outputs, strict=True)), strict=False)
        fgraph = FunctionGraph([*inputs, *free_outputs, *cotangents], grads, clone=True)
        get_mode("JAX").optimizer(fgraph)
        self.function = jax_funcify(fgraph)

    def __call__(self, xs, outputs, cotangents):
        import jax
        import jax.numpy as jnp

        if self.function is None:
            self.build()
        grads = self.function(*xs, *outputs, *[cotangents[j] for j in self.known])
        grads = iter(grads if isinstance(grads, (tuple, list)) else (grads,))
        result = []
        for i, x in enumerate(xs):
            if i in self.wrt:
                result.append(jnp.asarray(next(grads), dtype=x.dtype).reshape(jnp.shape(x)))
            else:
                result.append(np.zeros(jnp.shape(x), dtype=jax.dtypes.float0))
        return tuple(result)


def _shape_function(node):
    """(input shapes) -> output shapes: the outputs' static shapes when complete, else the
    op's ``infer_shape`` evaluated on the input shapes (memoised per input-shape signature)."""
    static = [getattr(v.type, "shape", ()) for v in node.outputs]
    if all(s is not None for shape in static for s in shape):
        return lambda in_shapes: [tuple(s) for s in static]
    op = node.op
    if not hasattr(op, "infer_shape"):
        unknown = [j for j, shape in enumerate(static) if any(s is None for s in shape)]
        raise NotImplementedError(
            f"libsection: JAX needs the shapes of {type(op).__name__}'s outputs {unknown} before "
            f"running it: define infer_shape(self, fgraph, node, input_shapes) on "
            f"{type(op).__name__}, or give its outputs static shapes"
        )
    memo: dict[tuple, list[tuple[int, ...]]] = {}

    def output_shapes(in_shapes):
        key = tuple(tuple(int(d) for d in s) for s in in_shapes)
        shapes = memo.get(key)
        if shapes is None:
            shapes = memo[key] = _infer(node, key)
        return shapes

    return output_shapes


def _infer(node, in_shapes) -> list[tuple[int, ...]]:
    import pytensor
    import pytensor.tensor as pt
    from pytensor.compile.mode import Mode

    symbolic = [tuple(pt.constant(d, dtype="int64") for d in s) for s in in_shapes]
    shapes = [tuple(shape) for shape in _call_infer_shape(node, symbolic)]
    dims = [d for shape in shapes for d in shape if not isinstance(d, (int, np.integer))]
    values = (
        pytensor.function([], dims, mode=Mode(linker="py", optimizer="fast_compile"))()
        if dims
        else []
    )
    evaluated = dict(zip(map(id, dims), values, strict=True))
    return [tuple(int(evaluated.get(id(d), d)) for d in shape) for shape in shapes]


def _call_infer_shape(node, shapes):
    """``infer_shape`` in the installed PyTensor's convention: ``(node, shapes)`` since 3.3
    (which wraps older methods), ``(fgraph, node, shapes)`` before."""
    import inspect

    from pytensor.tensor.elemwise import Elemwise

    if "fgraph" in inspect.signature(Elemwise.infer_shape).parameters:
        return node.op.infer_shape(None, node, shapes)
    return node.op.infer_shape(node, shapes)
