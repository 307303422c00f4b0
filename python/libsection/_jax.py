"""JAX (PyTensor's ``JAX`` mode, and what PyMC's numpyro and blackjax samplers compile) for
drop-in ops.

- Forward: an XLA FFI call (``_jax_ffi``): the node's compiled instance runs inside the
  compiled computation, called natively by XLA on its buffers. Output shapes come from the
  outputs' static shapes or, failing that, from the op's ``infer_shape``, evaluated once per
  input-shape signature while JAX traces; the handler checks what the C code returns against
  them. Ops with their own ``perform``, types the handler cannot pass, and a jaxlib without
  FFI headers use ``jax.pure_callback`` instead (a host round trip through Python per call).
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
  primitive, linear in the input tangents, whose transpose is the op's own PyTensor gradient
  graph (its pullback) converted to JAX. The pushforward itself is that same pullback,
  transposed by JAX (a vector-Jacobian product with respect to the output cotangent). So
  reverse mode runs the pullback, forward mode its transpose, and every composition of them
  differentiates the pullback's JAX conversion, whose C ops go through this same route: a
  second derivative exists exactly where PyTensor's ``pt.grad(pt.grad(...))`` does.
  An input whose gradient the op leaves undefined (``grad_not_implemented``,
  ``grad_undefined``) may be anything JAX does not differentiate (the data of PyMC's black-box
  likelihood); a differentiated value reaching it is an error, at trace time, naming the op
  and the input.
- ``jax.jit`` traces the call once per input-shape signature and caches the result.
"""

from __future__ import annotations

import functools
import itertools
import logging

import numpy as np

from . import _backends, _jax_ffi
from ._batched import vmap_method
from ._memo import Lru
from ._node import NodeRunner, compile_node

__all__ = ["jax_function", "register"]

_log = logging.getLogger("libsection")
_told: set[str] = set()  # op classes whose path was logged


def register(jax_funcify, op_class, own_perform) -> None:
    """Registers ``op_class`` with PyTensor's ``jax_funcify``; ``own_perform(op)`` tells whether
    the op's class has its own ``perform``. The functions PyTensor's JAX linker compiles raise
    the op's own errors (``raise_own_errors``)."""

    @jax_funcify.register(op_class)
    def _funcify(op, node=None, **kwargs):
        return jax_function(node, own_perform(op))

    _backends.when_imported("pytensor.link.jax.linker", lambda m: raise_own_errors(m.JAXLinker))


def raise_own_errors(linker_class) -> None:
    """Makes the functions ``linker_class`` (PyTensor's JAXLinker) compiles raise an op's own
    exception (a ``ValueError`` from its C code, say) where XLA reports the op's failure as
    its runtime error, so ``except ValueError`` works in JAX mode as in every other mode."""
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


def _integer(dtype) -> bool:
    return not np.issubdtype(np.dtype(dtype), np.inexact)


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


def _input_name(node, i: int) -> str:
    name = node.inputs[i].name
    return f"input {i} ({name})" if name else f"input {i}"


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
    output_shapes = _shape_function(node)
    why = _why_callback(node, own_perform)
    if why is None and not _jax_ffi.target_ready():
        why = "the XLA FFI handler is not available (see the warning above)"
    if why is None:
        _path_note(name, "an XLA FFI call of its compiled C code")
        call = _ffi_call(node, name)
    else:
        _path_note(name, f"jax.pure_callback, since {why}")
        call = _callback(node, own_perform, output_shapes)
    pullback = _Pullback(node, name)

    def forward(xs):
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

    def jvp(primals, tangents):
        outputs = differentiable(*primals)  # differentiable again, at an outer level
        perturbed = [i for i, t in enumerate(tangents) if not isinstance(t, SymbolicZero)]
        wrt = pullback.differentiated(perturbed)
        pushed = iter(())
        if wrt and pullback.known:
            pushed = iter(
                _pushforward_p().bind(
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
    from ._node import _params

    destroyed = {i for inputs in getattr(node.op, "destroy_map", {}).values() for i in inputs}

    def kind(i, v):
        return 0 if not _is_tensor(v) else 2 if i in destroyed else 1

    params = _params(node.op, node)
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
    exception from the op reaches XLA with the marker ``_jax_ffi.original_error`` reads, so
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
    errors = _jax_ffi.error_list()

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
            raise RuntimeError(_jax_ffi.report_error(errors, e, name)) from e

    def call(specs, *xs):
        return jax.pure_callback(reporting, specs, *xs, vmap_method="broadcast_all")

    call.runner = runner  # type: ignore[attr-defined]
    return call


# ---- derivatives ------------------------------------------------------------------------------


class _Pullback:
    """The op's PyTensor gradient graph (its pullback: output cotangents to input cotangents,
    through ``pytensor.gradient.grad`` with the cotangents as known gradients), rewritten as
    PyTensor's JAX mode rewrites it and converted to JAX. Built on first need, outside any
    trace, so that no function it makes holds a tracer; an op PyTensor cannot differentiate
    raises there, every time, naming the op."""

    def __init__(self, node, name: str):
        self.node, self.name = node, name
        self.function = None
        self.failure: tuple[type[BaseException], str] | None = None
        self.wrt: tuple[int, ...] = ()  # float inputs with a gradient (possibly zero)
        self.null: dict[int, str] = {}  # float inputs whose gradient the op leaves undefined
        self.known: tuple[int, ...] = ()  # float outputs (those with cotangents)

    def build(self) -> None:
        if self.function is not None or self.failure is not None:
            return
        from concurrent.futures import ThreadPoolExecutor

        # Built in a thread of its own, where neither the trace that asked first nor the mesh
        # it runs under applies (both are the asking thread's): the conversion makes arrays of
        # the graph's constants, which must be neither that trace's tracers nor typed with
        # that mesh, since every later trace reuses them.
        with ThreadPoolExecutor(1, thread_name_prefix="libsection-gradient") as pool:
            pool.submit(self._build_or_fail).result()

    def _build_or_fail(self) -> None:
        try:
            self._build()
        except Exception as e:
            self.failure = (
                type(e),
                f"libsection: JAX cannot differentiate {self.name}: PyTensor builds no "
                f"gradient for it ({type(e).__name__}: {e})",
            )

    def _build(self) -> None:
        import pytensor.gradient
        from pytensor.compile.mode import get_mode
        from pytensor.graph.fg import FunctionGraph
        from pytensor.graph.null_type import NullType
        from pytensor.graph.replace import graph_replace
        from pytensor.link.jax.dispatch import jax_funcify

        node = self.node
        inputs = [v.type() for v in node.inputs]
        outputs = node.op.make_node(*inputs).outputs
        floats = [i for i, v in enumerate(inputs) if not _integer(v.type.dtype)]
        known = tuple(j for j, v in enumerate(outputs) if not _integer(v.type.dtype))
        cotangents = [outputs[j].type() for j in known]
        grads: list = pytensor.gradient.grad(  # type: ignore[assignment]
            cost=None,
            wrt=[inputs[i] for i in floats],
            known_grads=dict(zip([outputs[j] for j in known], cotangents, strict=True)),
            disconnected_inputs="ignore",
            return_disconnected="zero",
            null_gradients="return",
        )
        null = {
            i: g.type.why_null
            for i, g in zip(floats, grads, strict=True)
            if isinstance(g.type, NullType)
        }
        wrt = tuple(i for i in floats if i not in null)
        grads = [g for i, g in zip(floats, grads, strict=True) if i not in null]
        # The forward outputs are at hand where the pullback runs: use them rather than
        # running the op again.
        free_outputs = [o.type() for o in outputs]
        grads = graph_replace(grads, dict(zip(outputs, free_outputs, strict=True)), strict=False)
        if grads:
            fgraph = FunctionGraph([*inputs, *free_outputs, *cotangents], grads, clone=True)
            get_mode("JAX").optimizer(fgraph)
            converted = jax_funcify(fgraph)
        else:
            converted = lambda *args: ()  # noqa: E731
        self.function, self.null, self.wrt, self.known = converted, null, wrt, known

    def differentiated(self, perturbed) -> tuple[int, ...]:
        """The inputs among ``perturbed`` (indices of inputs with a tangent) the pushforward
        takes: float inputs with a gradient. A perturbed input whose gradient the op leaves
        undefined is an error here, at trace time."""
        if not perturbed:
            return ()
        self.build()
        self.raise_failure()
        for i in perturbed:
            if i in self.null:
                from pytensor.gradient import NullTypeGradError

                raise NullTypeGradError(
                    f"libsection: JAX differentiates {self.name}'s {_input_name(self.node, i)}, "
                    f"whose gradient the op leaves undefined ({self.null[i]}). Leave that input "
                    f"out of what JAX differentiates (a constant, a non-differentiated argument "
                    f"or jax.lax.stop_gradient)"
                )
        return tuple(i for i in perturbed if i in self.wrt)

    def raise_failure(self) -> None:
        if self.failure is not None:
            kind, message = self.failure
            try:
                error = kind(message)
            except Exception:
                error = NotImplementedError(message)
            raise error

    def cotangents(self, xs, ys, gs, wanted):
        """The input cotangents of ``wanted`` (indices into ``wrt``'s inputs) for the output
        cotangents ``gs`` (one per ``known`` output), each with its input's dtype and shape."""
        import jax.numpy as jnp

        grads = self.function(*xs, *ys, *gs)
        grads = grads if isinstance(grads, (tuple, list)) else (grads,)
        by_input = dict(zip(self.wrt, grads, strict=True))
        return [
            jnp.broadcast_to(jnp.asarray(by_input[i], dtype=xs[i].dtype), jnp.shape(xs[i]))
            for i in wanted
        ]


def _batched(core, batch_ndim: int):
    for _ in range(batch_ndim):
        core = _vmap(core)
    return core


def _vmap(f):
    import jax

    return jax.vmap(f)


def _split(operands, pullback: _Pullback):
    n_in, n_out = len(pullback.node.inputs), len(pullback.node.outputs)
    return operands[:n_in], operands[n_in : n_in + n_out], operands[n_in + n_out :]


def _batch_ndim(operands, pullback: _Pullback) -> int:
    import jax.numpy as jnp

    n_in = len(pullback.node.inputs)
    y = operands[n_in]  # an output: every operand has the same leading batch dimensions
    return jnp.ndim(y) - _core_ndim(pullback.node.outputs[0])


def _pushforward(*operands, pullback: _Pullback, wrt: tuple[int, ...]):
    """The output tangents of the float outputs for the tangents of inputs ``wrt``: the
    transpose of the pullback with respect to the output cotangents (a vector-Jacobian product
    of the pullback, which is linear in them), evaluated at zero cotangents."""
    import jax
    import jax.numpy as jnp

    def core(*ops):
        xs, ys, ts = _split(ops, pullback)
        zeros = [jnp.zeros_like(ys[j]) for j in pullback.known]
        _, transpose = jax.vjp(lambda gs: pullback.cotangents(xs, ys, gs, wrt), zeros)
        (pushed,) = transpose(list(ts))
        return pushed

    return list(_batched(core, _batch_ndim(operands, pullback))(*operands))


def _pushforward_transpose(cotangents, *operands, pullback: _Pullback, wrt):
    """The pullback: the tangent operands' cotangents for the output cotangents."""
    import jax
    import jax.numpy as jnp
    from jax.interpreters import ad

    n_in, n_out = len(pullback.node.inputs), len(pullback.node.outputs)
    primal = [jax.typeof(y) for y in operands[n_in : n_in + n_out]]
    gs = [
        jnp.zeros(primal[j].shape, primal[j].dtype) if type(g) is ad.Zero else g
        for j, g in zip(pullback.known, cotangents, strict=True)
    ]

    def core(*ops):
        xs, ys, gs_ = ops[:n_in], ops[n_in : n_in + n_out], ops[n_in + n_out :]
        return pullback.cotangents(xs, ys, gs_, wrt)

    residuals = operands[: n_in + n_out]
    if any(ad.is_undefined_primal(r) for r in residuals):
        raise NotImplementedError(
            f"libsection: {pullback.name}'s pushforward is linear in the tangents only"
        )
    result = _batched(core, _batch_ndim(operands, pullback))(*residuals, *gs)
    return [None] * (n_in + n_out) + list(result)


def _pushforward_jvp(primals, tangents, *, pullback: _Pullback, wrt):
    import jax
    from jax.interpreters import ad

    tangents = tuple(ad.instantiate_zeros(t) for t in tangents)
    pushforward = functools.partial(_pushforward, pullback=pullback, wrt=wrt)
    return jax.jvp(pushforward, tuple(primals), tangents)


def _pushforward_batch(operands, dims, *, pullback: _Pullback, wrt):
    """Under ``vmap``: the batch axis first on every operand (broadcast where absent), which
    the primitive takes as one more leading batch dimension."""
    import jax.numpy as jnp

    size = next(jnp.shape(x)[d] for x, d in zip(operands, dims, strict=True) if d is not None)
    moved = [
        jnp.broadcast_to(x, (size, *jnp.shape(x))) if d is None else jnp.moveaxis(x, d, 0)
        for x, d in zip(operands, dims, strict=True)
    ]
    out = _pushforward_p().bind(*moved, pullback=pullback, wrt=wrt)
    return out, [0] * len(out)


def _pushforward_abstract(*avals, pullback: _Pullback, wrt):
    # The tangent of an output has its primal's type: shape (batch included), dtype, sharding
    # and the mesh axes it varies over.
    n_in = len(pullback.node.inputs)
    return [avals[n_in + j].strip_weak_type() for j in pullback.known]


@functools.cache
def _pushforward_p():
    """The primitive ``libsection_pushforward``: a node's output tangents, linear in the
    tangent operands, with the node's pullback as its transpose; operands the node's inputs,
    its outputs, then the tangents of the inputs ``wrt``, all with the same leading batch
    dimensions. Made on first use (JAX is imported only then)."""
    from jax.extend.core import Primitive
    from jax.interpreters import ad, batching, mlir

    p = Primitive("libsection_pushforward")
    p.multiple_results = True
    p.def_impl(_pushforward)
    p.def_abstract_eval(_pushforward_abstract)
    ad.primitive_jvps[p] = _pushforward_jvp
    ad.primitive_transposes[p] = _pushforward_transpose
    batching.primitive_batchers[p] = _pushforward_batch
    mlir.register_lowering(p, mlir.lower_fun(_pushforward, multiple_results=True))
    return p


# ---- shapes -----------------------------------------------------------------------------------


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
    memo: Lru[tuple, list[tuple[int, ...]]] = Lru(256)  # bounded: a shape per batch size

    def output_shapes(in_shapes):
        key = tuple(tuple(int(d) for d in s) for s in in_shapes)
        return memo.get_or_make(key, lambda: _infer(node, key))

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
