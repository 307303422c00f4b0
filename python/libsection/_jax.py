"""JAX (PyTensor's ``JAX`` mode, and what PyMC's numpyro and blackjax samplers compile) for
drop-in ops.

- Forward: an XLA FFI call (``_jax_ffi``): the node's compiled instance runs inside the
  compiled computation, called natively by XLA on its buffers, one instance per converted
  function. Output shapes come from the outputs' static shapes or, failing that, from the op's
  ``infer_shape``, evaluated once per input-shape signature while JAX traces; the handler
  checks what the C code returns against them. Ops with their own ``perform``, types the
  handler cannot pass, and a jaxlib without FFI headers use ``jax.pure_callback`` instead (a
  host round trip through Python per call).
- ``vmap``: ``vmap_method="broadcast_all"``: the call gets the whole batch at once (every
  input broadcast to the batch shape), and the handler (or the callback) loops over it.
- Gradients: a ``jax.custom_vjp`` whose backward pass is the JAX conversion of the op's own
  PyTensor gradient graph (``pullback``/``L_op``/``grad``, through ``pytensor.gradient.grad``
  with the cotangents as known gradients), rewritten as PyTensor's JAX mode rewrites it;
  inputs whose gradient is undefined or disconnected get zeros.
- ``jax.jit`` traces the call once per input-shape signature and caches the result.
"""

from __future__ import annotations

import itertools
import logging

import numpy as np

from . import _batched, _jax_ffi
from ._node import NodeRunner, compile_node

__all__ = ["jax_function", "register"]

_log = logging.getLogger("libsection")
_told: set[str] = set()  # op classes whose path was logged


def register(jax_funcify, op_class, own_perform) -> None:
    """Registers ``op_class`` with PyTensor's ``jax_funcify``; ``own_perform(op)`` tells whether
    the op's class has its own ``perform``."""

    @jax_funcify.register(op_class)
    def _funcify(op, node=None, **kwargs):
        return jax_function(node, own_perform(op))


def raise_own_errors(linker_class) -> None:
    """Makes the functions ``linker_class`` (PyTensor's JAXLinker) compiles raise an op's own
    exception (a ``ValueError`` from its C code, say) where XLA reports the FFI call's failure
    as its runtime error, so ``except ValueError`` works in JAX mode as in every other mode."""
    compile_jitted = linker_class.jit_compile
    if getattr(compile_jitted, "libsection", False):
        return

    def jit_compile(self, fn):
        return _RaisingOwnErrors(compile_jitted(self, fn))

    jit_compile.libsection = True  # type: ignore[attr-defined]
    linker_class.jit_compile = jit_compile


class _RaisingOwnErrors:
    """A jitted function whose calls raise the op's own exception behind an FFI failure."""

    def __init__(self, jitted):
        self.jitted = jitted

    def __call__(self, *args):
        try:
            return self.jitted(*args)
        except Exception as e:
            own = _jax_ffi.original_error(e)
            if own is None:
                raise
            raise own from e

    def __getattr__(self, name):  # lower, trace, ... of the jitted function
        return getattr(self.jitted, name)


def _core_ndim(variable) -> int:
    return getattr(variable.type, "ndim", 0)


def _is_tensor(variable) -> bool:
    return hasattr(variable.type, "ndim") and hasattr(variable.type, "broadcastable")


def _why_callback(node, own_perform: bool) -> str | None:
    """Why the node cannot run through the FFI call, or None when it can."""
    from pytensor.scalar import ScalarType

    if own_perform:
        return "its class defines perform, which JAX runs as PyTensor would"
    for v in [*node.inputs, *node.outputs]:
        if not (_is_tensor(v) or isinstance(v.type, ScalarType)):
            return f"the XLA handler cannot pass a {v.type}"
        if np.dtype(v.type.dtype) not in _jax_ffi.SUPPORTED_DTYPES:
            return f"the XLA handler cannot pass {v.type.dtype}"
    if not node.inputs:
        return "it has no inputs"
    return None


def _path_note(name: str, text: str) -> None:
    if name not in _told:
        _told.add(name)
        _log.debug("libsection: %s in JAX: %s", name, text)


def jax_function(node, own_perform: bool):
    """A JAX-traceable function of the node's inputs (the output, or a tuple of outputs)."""
    import jax

    op = node.op
    name = type(op).__name__
    n_out = len(node.outputs)
    out_dtypes = [np.dtype(v.type.dtype) for v in node.outputs]
    output_shapes = _shape_function(node)
    why = _why_callback(node, own_perform)
    if why is None and not _jax_ffi.target_ready():
        why = "the XLA FFI handler is not available (see the warning above)"
    if why is None:
        _path_note(name, "an XLA FFI call of its compiled C code")
        call = _ffi_call(node, name)
    else:
        _path_note(name, f"jax.pure_callback, since {why}")
        call = _callback(node, own_perform, output_shapes, out_dtypes)

    def forward(*xs):
        shapes = output_shapes([tuple(x.shape) for x in xs])
        specs = tuple(jax.ShapeDtypeStruct(s, d) for s, d in zip(shapes, out_dtypes, strict=True))
        result = call(specs, *xs)
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


def _ffi_call(node, name: str):
    """(output specs, *inputs) -> outputs through the FFI target, on a fresh instance."""
    destroyed = {i for inputs in getattr(node.op, "destroy_map", {}).values() for i in inputs}

    def kind(i, v):
        return 0 if not _is_tensor(v) else 2 if i in destroyed else 1

    compiled = compile_node(node)
    return _jax_ffi.call_node(
        compiled,
        name,
        [(_core_ndim(v), kind(i, v)) for i, v in enumerate(node.inputs)],
        [(_core_ndim(v), 0 if not _is_tensor(v) else 1) for v in node.outputs],
        batch=None if destroyed else _batched.ffi_batch(compiled, node),
    )


def _callback(node, own_perform: bool, output_shapes, out_dtypes):
    """(output specs, *inputs) -> outputs through ``jax.pure_callback`` on the host."""
    import jax

    op = node.op
    runner = NodeRunner(node, own_perform)  # this function's own struct
    n_out = len(node.outputs)
    core_ndims = [_core_ndim(v) for v in node.inputs]
    destroyed = sorted({i for inputs in getattr(op, "destroy_map", {}).values() for i in inputs})

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

    def call(specs, *xs):
        return jax.pure_callback(host, specs, *xs, vmap_method="broadcast_all")

    call.runner = runner  # type: ignore[attr-defined]
    return call


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
        from pytensor.graph.null_type import NullType
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
            null_gradients="return",
        )
        # An input whose gradient the op leaves undefined (grad_not_implemented, as for data
        # a black-box likelihood takes) gets zeros: samplers differentiate every float input.
        defined = [k for k, g in enumerate(grads) if not isinstance(g.type, NullType)]
        self.wrt = [self.wrt[k] for k in defined]
        grads = [grads[k] for k in defined]
        # The backward pass gets the forward outputs: use them rather than running the op again.
        free_outputs = [o.type() for o in outputs]
        grads = graph_replace(grads, dict(zip(outputs, free_outputs, strict=True)), strict=False)
        if not grads:
            self.function = lambda *args: ()
            return
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
            elif _integer(x.dtype):
                result.append(np.zeros(jnp.shape(x), dtype=jax.dtypes.float0))
            else:  # a float input without a gradient
                result.append(jnp.zeros(jnp.shape(x), dtype=x.dtype))
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
