"""JAX (PyTensor's ``JAX`` mode, and what PyMC's numpyro and blackjax samplers compile) for
drop-in ops.

- Forward: an XLA FFI call (``_jax_ffi``): the node's compiled instance runs inside the
  compiled computation, called natively by XLA on its buffers. Output shapes come from the
  outputs' static shapes or, failing that, from the op's ``infer_shape``, evaluated once per
  input-shape signature while JAX traces (``_jax_shapes``); the handler checks what the C code
  returns against them. Ops with their own ``perform``, types the handler cannot pass, and a
  jaxlib without FFI headers use ``jax.pure_callback`` instead (a host round trip through
  Python per call).
- Inputs: anything a JAX function takes (Python scalars, weak types, NumPy arrays, tracers),
  cast to the node's input dtypes as JAX canonicalises them (float64 is float32 with
  ``jax_enable_x64`` off: the handler then runs the C code on float64 copies, as CVM would,
  and rounds the outputs back); under ``shard_map``, made varying over the same mesh axes.
- ``vmap``: ``vmap_method="broadcast_all"``: the call gets the whole batch at once (every
  input broadcast to the batch shape). The handler runs it through the node's ``Batched`` (one
  C loop over the rows, or one call for an op whose ``vmap_method`` is ``"broadcast_all"``)
  where its module has a batch entry, the op destroys no input and the buffers are in the
  node's dtypes; otherwise it (or the callback) calls the op per batch element.
- Derivatives: the op is a ``jax.custom_jvp`` whose tangent is the ``libsection_pushforward``
  primitive (``_jax_ad``): linear in the input tangents, transposed to the op's own PyTensor
  gradient graph (its pullback) in the inputs JAX perturbs (the tangents that are not symbolic
  zeros), converted to JAX: an input JAX holds constant costs no derivative. An input whose
  gradient the op leaves undefined (``grad_not_implemented``, ``grad_undefined``) may be
  anything JAX does not differentiate (the data of PyMC's black-box likelihood); a
  differentiated value reaching it is an error, at trace time, naming the op and the input.
- ``jax.jit`` traces the call once per input-shape signature and caches the result.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import numpy as np

from . import _backends, _jax_ffi
from ._batched import vmap_method
from ._jax_ad import Pullback, pushforward_primitive
from ._jax_shapes import shape_function
from ._node import NodeRunner, compile_node, node_params
from ._protocol import blockwise_check_broadcast
from ._traceback import entry_point

__all__ = ["jax_function", "register", "register_batched"]

_log = logging.getLogger("libsection")
_told: set[str] = set()  # op classes whose path was logged


def register(jax_funcify, op_class, own_perform) -> None:
    """Registers ``op_class`` with PyTensor's ``jax_funcify``; ``own_perform(op)`` tells whether
    the op's class has its own ``perform``. The functions PyTensor's JAX linker compiles raise
    the op's own errors (``raise_own_errors``)."""

    @jax_funcify.register(op_class)
    @entry_point
    def _funcify(op, node=None, **kwargs):
        return jax_function(node, own_perform(op))

    _backends.when_imported("pytensor.link.jax.linker", lambda m: raise_own_errors(m.JAXLinker))


def raise_own_errors(linker_class) -> None:
    """Makes the functions ``linker_class`` (PyTensor's JAXLinker) compiles raise an op's own
    exception (a ``ValueError`` from its C code, say) where XLA reports the op's failure as
    its runtime error, so ``except ValueError`` works in JAX mode as in every other mode."""
    # Why a patch: XLA runs the compiled computation with no Python frame of the op's around
    # it, and its runtime error reaches the caller straight from the jitted function, which
    # PyTensor's thunk calls. What jit_compile returns is the one place between the two where
    # the op's exception can be raised instead (PyTensor has no hook for a backend's errors).
    compile_jitted = linker_class.jit_compile
    if getattr(compile_jitted, "libsection", False):
        return

    def jit_compile(self, fn):
        return _RaisingOwnErrors(compile_jitted(self, fn))

    jit_compile.libsection = True  # type: ignore[attr-defined]
    linker_class.jit_compile = jit_compile


class _RaisingOwnErrors:
    """A jitted function whose calls raise the op's own exception behind an XLA failure."""

    def __init__(self, jitted):
        self.jitted = jitted

    def __call__(self, *args):
        mark = _jax_ffi.failure_mark()
        try:
            return self.jitted(*args)
        except Exception as e:
            own = _jax_ffi.original_error(e, since=mark)
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
    """A JAX function of the node's inputs (the output, or a tuple of outputs), which every
    JAX transformation accepts."""
    import jax
    import jax.numpy as jnp
    from jax.custom_derivatives import SymbolicZero
    from jax.sharding import AxisType
    from jax.sharding import PartitionSpec as P

    name = type(node.op).__name__
    n_in, n_out = len(node.inputs), len(node.outputs)
    in_dtypes = [np.dtype(v.type.dtype) for v in node.inputs]
    out_dtypes = [np.dtype(v.type.dtype) for v in node.outputs]
    output_shapes = shape_function(node)
    why = _why_callback(node, own_perform)
    if why is None and not _jax_ffi.target_ready():
        why = "the XLA FFI handler is not available (see the warning above)"
    if why is None:
        _path_note(name, "an XLA FFI call of its compiled C code")
        call = _ffi_call(node, name)
    else:
        _path_note(name, f"jax.pure_callback, since {why}")
        call = _callback(node, own_perform, output_shapes)
    pullback = Pullback(node, name)
    # Values from a taped pass need the FFI call (and _gradient.recordable's node).
    from ._gradient import recordable as recordable_node

    recordable = why is None and recordable_node(node)

    def forward(xs, call=call):
        shapes = output_shapes([jnp.shape(x) for x in xs])
        # The outputs vary over the mesh axes the inputs do (one set, by _same_varying), on the
        # inputs' mesh: unsharded within it, as the C code makes them whole.
        aval = jax.typeof(xs[0]) if xs else None
        mesh = aval.sharding.mesh if aval is not None else None
        whole = None if mesh is None or mesh.empty else jax.sharding.NamedSharding(mesh, P())
        mat = aval.manual_axis_type if aval is not None else None
        specs = [
            jax.ShapeDtypeStruct(s, _canonical(d), manual_axis_type=mat, sharding=whole)
            for s, d in zip(shapes, out_dtypes, strict=True)
        ]
        outputs = tuple(call(specs, *xs))
        if whole is not None and mesh is not None and AxisType.Explicit in mesh.axis_types:
            # Sharding in types: under vmap, an output's batch axis is sharded as the inputs'
            # (which JAX's batching of the FFI call leaves out); XLA slices it so.
            outputs = tuple(jax.sharding.reshard(y, whole) for y in outputs)
        return outputs

    @jax.custom_jvp
    def differentiable(*xs):
        return forward(xs)

    recorded: dict[tuple[bool, ...], Any] = {}

    def taped(derived):
        """The node's values from a taped pass its derived gradient (which differentiates the
        inputs ``derived`` marks) sweeps: a ``TapedValues`` node's call, differentiable as
        ``differentiable`` is."""
        if derived not in recorded:
            from ._gradient import TapedValues

            op = TapedValues(
                node.op, derived, (False,) * n_out, tuple(v.type for v in node.outputs)
            )
            through = _ffi_call(op.make_node(*node.inputs), name)
            f = jax.custom_jvp(lambda *xs: forward(xs, through))
            f.defjvp(jvp, symbolic_zeros=True)
            recorded[derived] = f
        return recorded[derived]

    def jvp(primals, tangents):
        perturbed = [i for i, t in enumerate(tangents) if not isinstance(t, SymbolicZero)]
        wrt = pullback.differentiated(perturbed)
        derived = pullback.derived_inputs(wrt) if wrt and recordable else None
        # differentiable again, at an outer level; a pullback of the op's own code sweeps the
        # tape of the values' pass
        outputs = (taped(derived) if derived else differentiable)(*primals)
        pushed = iter(())
        if wrt and pullback.known:
            pushed = iter(
                pushforward_primitive().bind(
                    *primals, *outputs, *[tangents[i] for i in wrt], pullback=pullback, wrt=wrt
                )
            )
        out_tangents = [
            next(pushed)
            if wrt and j in pullback.known
            else SymbolicZero(jax.typeof(y).strip_weak_type().to_tangent_aval())
            for j, y in enumerate(outputs)
        ]
        return outputs, tuple(out_tangents)

    differentiable.defjvp(jvp, symbolic_zeros=True)

    def function(*xs):
        if len(xs) != n_in:
            raise TypeError(f"libsection: {name} takes {n_in} inputs, got {len(xs)}")
        xs = _same_varying(
            [_as_input(x, _canonical(d)) for x, d in zip(xs, in_dtypes, strict=True)]
        )
        outputs = differentiable(*xs)
        return outputs[0] if n_out == 1 else tuple(outputs)

    function.pullback = pullback  # type: ignore[attr-defined]
    function.call = call  # type: ignore[attr-defined]
    return function


def _canonical(dtype) -> np.dtype:
    """The dtype JAX gives a value of ``dtype`` (float64 is float32 with x64 off)."""
    import jax

    return np.dtype(jax.dtypes.canonicalize_dtype(dtype))


def _as_input(x, dtype: np.dtype):
    """``x`` (an array, a tracer, a Python or NumPy scalar) with the node's dtype as JAX has
    it; a value that has it already (weakly typed or not) as it is."""
    import jax

    if getattr(x, "dtype", None) == dtype:
        return x
    return jax.lax.convert_element_type(x, dtype)


def _same_varying(xs):
    """Under ``shard_map``: every input varying over the mesh axes any of them varies over, as
    the call's outputs will be (a ``pcast``, which JAX transposes to a sum)."""
    import jax

    varying = [jax.typeof(x).manual_axis_type.varying for x in xs]
    axes = frozenset().union(*varying)
    if all(v == axes for v in varying):
        return xs
    return [
        x if v == axes else jax.lax.pcast(x, tuple(sorted(axes - v, key=str)), to="varying")
        for x, v in zip(xs, varying, strict=True)
    ]


def _ffi_call(node, name: str):
    """(output specs, *inputs) -> outputs through the FFI target, on a fresh instance."""
    destroyed = {i for inputs in getattr(node.op, "destroy_map", {}).values() for i in inputs}

    def kind(i, v):
        return 0 if not _is_tensor(v) else 2 if i in destroyed else 1

    params = node_params(node.op, node)
    # A vmapped call runs its batch in one C loop (or one call, for an op that takes whole
    # batches), but not one whose inputs the op destroys: each row gets a copy of its own.
    batch = 0 if destroyed else 2 if vmap_method(node.op) == "broadcast_all" else 1
    return _jax_ffi.call_node(
        compile_node(node),
        name,
        [(_core_ndim(v), kind(i, v), np.dtype(v.type.dtype)) for i, v in enumerate(node.inputs)],
        [(_core_ndim(v), int(_is_tensor(v)), np.dtype(v.type.dtype)) for v in node.outputs],
        None if params is None else params[0],
        batch,
    )


def _callback(node, own_perform: bool, output_shapes):
    """(output specs, *inputs) -> outputs through ``jax.pure_callback`` on the host. An
    exception from the op is reported (``_jax_ffi.reported_error``) before it reaches XLA, so
    JAX mode raises the op's own exception, as on the FFI path."""
    import jax

    op = node.op
    name = type(op).__name__
    runner = NodeRunner(node, own_perform)  # this function's own struct
    n_out = len(node.outputs)
    core_ndims = [_core_ndim(v) for v in node.inputs]
    in_dtypes = [np.dtype(v.type.dtype) for v in node.inputs]
    out_dtypes = [np.dtype(v.type.dtype) for v in node.outputs]
    destroyed = sorted({i for inputs in getattr(op, "destroy_map", {}).values() for i in inputs})

    def run_once(arrays, dtypes):
        for i in destroyed:  # JAX's buffers are not the op's to overwrite
            arrays[i] = np.array(arrays[i])
        results = runner(*arrays)
        results = (results,) if n_out == 1 else results
        return [np.asarray(r, dtype=d) for r, d in zip(results, dtypes, strict=True)]

    def host(*arrays):
        """The op on NumPy arrays of its own dtypes (float64 copies where x64 is off); under
        vmap, every input carries the same leading batch dimensions, looped over here."""
        dtypes = [np.dtype(_canonical(d)) for d in out_dtypes]
        arrays = [np.asarray(a, dtype=d) for a, d in zip(arrays, in_dtypes, strict=True)]
        batch_ndim = max((a.ndim - n for a, n in zip(arrays, core_ndims, strict=True)), default=0)
        if batch_ndim == 0:
            return tuple(run_once(arrays, dtypes))
        batch_shape = arrays[0].shape[:batch_ndim]  # broadcast_all: the same for every input
        outputs = None
        for index in itertools.product(*map(range, batch_shape)):
            # `...` keeps 0-d elements arrays (a full integer index gives NumPy scalars).
            results = run_once([a[(*index, ...)] for a in arrays], dtypes)
            if outputs is None:
                outputs = [np.empty(batch_shape + r.shape, r.dtype) for r in results]
            for out, r in zip(outputs, results, strict=True):
                out[index] = r
        if outputs is None:  # an empty batch: element shapes from the shape function
            shapes = output_shapes([a.shape[batch_ndim:] for a in arrays])
            outputs = [np.empty(batch_shape + s, d) for s, d in zip(shapes, dtypes, strict=True)]
        return tuple(outputs)

    def reporting(*arrays):
        try:
            return host(*arrays)
        except Exception as e:  # XLA keeps only the text: leave the exception to be found
            raise RuntimeError(_jax_ffi.reported_error(e, name)) from e

    def call(specs, *xs):
        return jax.pure_callback(reporting, specs, *xs, vmap_method="broadcast_all")

    call.runner = runner  # type: ignore[attr-defined]
    return call


def register_batched(jax_funcify, op_class, own_perform) -> None:
    """Registers ``op_class`` (``BatchedOp``, a drop-in op's ``Blockwise``) with PyTensor's
    ``jax_funcify``: the core op's own JAX function (its FFI call, its gradient), vectorized;
    under vmap its FFI handler gets the whole batch, and runs it in the C loop."""

    @jax_funcify.register(op_class)
    @entry_point
    def _funcify(op, node=None, **kwargs):
        import jax.numpy as jnp

        vectorized = jnp.vectorize(jax_function(op.core_node(node), False), signature=op.signature)

        def batched(*inputs):
            blockwise_check_broadcast(op.blockwise, node, inputs)
            return vectorized(*inputs)

        return batched
