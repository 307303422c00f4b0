"""JAX's derivatives of a drop-in node: the ``libsection_pushforward`` primitive.

A node's JAX function (``_jax.jax_function``) is a ``jax.custom_jvp`` whose tangent is this
primitive, linear in the input tangents, whose transpose is the op's own PyTensor gradient graph
(its pullback, ``Pullback``) converted to JAX. The pushforward itself is that same pullback,
transposed by JAX (a vector-Jacobian product with respect to the output cotangent). So reverse
mode runs the pullback, forward mode its transpose, and every composition of them
differentiates the pullback's JAX conversion, whose C ops go through the same route: a second
derivative exists exactly where PyTensor's ``pt.grad(pt.grad(...))`` does.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._memo import once

__all__ = ["Pullback", "pushforward_primitive"]


def _integer(dtype) -> bool:
    return not np.issubdtype(np.dtype(dtype), np.inexact)


def _core_ndim(variable) -> int:
    return getattr(variable.type, "ndim", 0)


def _input_name(node, i: int) -> str:
    name = node.inputs[i].name
    return f"input {i} ({name})" if name else f"input {i}"


class Pullback:
    """The op's PyTensor gradient graph (its pullback: output cotangents to input cotangents,
    through ``pytensor.gradient.grad`` with the cotangents as known gradients), rewritten as
    PyTensor's JAX mode rewrites it and converted to JAX, once per set of inputs JAX
    differentiates (``wrt``): the graph of those inputs' gradients only, so an input JAX holds
    constant (data, ``stop_gradient``, an argument outside ``argnums``) costs nothing, and a
    derived gradient differentiates only ``wrt``. Each is built on first need, outside any
    trace, so that no function it makes holds a tracer; an op PyTensor cannot differentiate
    raises there, every time, naming the op."""

    def __init__(self, node, name: str):
        self.node, self.name = node, name
        # float inputs (those JAX may differentiate) and float outputs (those with cotangents)
        self.floats = tuple(i for i, v in enumerate(node.inputs) if not _integer(v.type.dtype))
        self.known = tuple(j for j, v in enumerate(node.outputs) if not _integer(v.type.dtype))
        self._functions: dict[tuple[int, ...], Any] = {}  # wrt -> the graph in JAX
        self._failures: dict[tuple[int, ...], tuple[type[BaseException], str]] = {}
        self._null: dict[tuple[int, ...], dict[int, str]] = {}  # inputs left undefined
        # wrt -> the inputs the graph's one derived gradient of the node's op differentiates
        self._derived: dict[tuple[int, ...], tuple[bool, ...] | None] = {}

    def build(self, wrt: tuple[int, ...]) -> None:
        if wrt in self._functions or wrt in self._failures:
            return
        from concurrent.futures import ThreadPoolExecutor

        # Built in a thread of its own, where neither the trace that asked first nor the mesh
        # it runs under applies (both are the asking thread's): the conversion makes arrays of
        # the graph's constants, which must be neither that trace's tracers nor typed with
        # that mesh, since every later trace reuses them.
        with ThreadPoolExecutor(1, thread_name_prefix="libsection-gradient") as pool:
            pool.submit(self._build_or_fail, wrt).result()

    def _build_or_fail(self, wrt: tuple[int, ...]) -> None:
        try:
            self._build(wrt)
        except Exception as e:
            self._failures[wrt] = (
                type(e),
                f"libsection: JAX cannot differentiate {self.name}: PyTensor builds no "
                f"gradient for it ({type(e).__name__}: {e})",
            )

    def _build(self, wrt: tuple[int, ...]) -> None:
        import pytensor.gradient
        from pytensor.compile.mode import get_mode
        from pytensor.graph.fg import FunctionGraph
        from pytensor.graph.null_type import NullType
        from pytensor.graph.replace import graph_replace
        from pytensor.link.jax.dispatch import jax_funcify

        node = self.node
        inputs = [v.type() for v in node.inputs]
        outputs = node.op.make_node(*inputs).outputs
        cotangents = [outputs[j].type() for j in self.known]
        # Only the gradients of `wrt`: PyTensor builds no graph for the others, and a derived
        # gradient node is narrowed to them (the rewrite that prunes unused gradients).
        grads: list = pytensor.gradient.grad(  # type: ignore[assignment]
            cost=None,
            wrt=[inputs[i] for i in wrt],
            known_grads=dict(zip([outputs[j] for j in self.known], cotangents, strict=True)),
            disconnected_inputs="ignore",
            return_disconnected="zero",
            null_gradients="return",
        )
        null = {
            i: g.type.why_null
            for i, g in zip(wrt, grads, strict=True)
            if isinstance(g.type, NullType)
        }
        if null:  # an error where JAX differentiates the input (`differentiated`)
            self._null[wrt] = null
            return
        # The forward outputs are at hand where the pullback runs: use them rather than
        # running the op again.
        free_outputs = [o.type() for o in outputs]
        grads = graph_replace(grads, dict(zip(outputs, free_outputs, strict=True)), strict=False)
        fgraph = FunctionGraph([*inputs, *free_outputs, *cotangents], grads, clone=True)
        get_mode("JAX").optimizer(fgraph)
        self._derived[wrt] = _derived_inputs(fgraph, node.op)
        self._functions[wrt] = jax_funcify(fgraph)

    def derived_inputs(self, wrt: tuple[int, ...]) -> tuple[bool, ...] | None:
        """The inputs the gradient graph of ``wrt`` differentiates through a derived gradient of
        the node's op (its ``DerivedGradient``, the one such node), or None: the node's values
        may then come from a taped pass that gradient sweeps (``TapedValues``)."""
        return self._derived.get(wrt)

    def differentiated(self, perturbed) -> tuple[int, ...]:
        """The inputs among ``perturbed`` (indices of inputs with a tangent) the pushforward
        takes, its ``wrt``: the float ones, whose gradient graph is built here. A perturbed
        input whose gradient the op leaves undefined is an error here, at trace time."""
        wrt = tuple(i for i in perturbed if i in self.floats)
        if not wrt:
            return ()
        self.build(wrt)
        self.raise_failure(wrt)
        null = self._null.get(wrt, {})
        for i in wrt:
            if i in null:
                from pytensor.gradient import NullTypeGradError

                raise NullTypeGradError(
                    f"libsection: JAX differentiates {self.name}'s {_input_name(self.node, i)}, "
                    f"whose gradient the op leaves undefined ({null[i]}). Leave that input "
                    f"out of what JAX differentiates (a constant, a non-differentiated argument "
                    f"or jax.lax.stop_gradient)"
                )
        return wrt

    def raise_failure(self, wrt: tuple[int, ...]) -> None:
        if wrt in self._failures:
            kind, message = self._failures[wrt]
            try:
                error = kind(message)
            except Exception:
                error = NotImplementedError(message)
            raise error

    def cotangents(self, xs, ys, gs, wrt):
        """The cotangents of the inputs ``wrt`` (as ``differentiated`` gave them) for the output
        cotangents ``gs`` (one per ``known`` output), each with its input's dtype and shape."""
        import jax.numpy as jnp

        grads = self._functions[wrt](*xs, *ys, *gs)
        grads = grads if isinstance(grads, (tuple, list)) else (grads,)
        return [
            jnp.broadcast_to(jnp.asarray(g, dtype=xs[i].dtype), jnp.shape(xs[i]))
            for i, g in zip(wrt, grads, strict=True)
        ]


def _derived_inputs(fgraph, op) -> tuple[bool, ...] | None:
    from ._gradient import DerivedGradient

    found = [
        n.op.differentiated
        for n in fgraph.apply_nodes
        if type(n.op) is DerivedGradient and n.op.forward == op
    ]
    return found[0] if len(found) == 1 else None


def _batched(core, batch_ndim: int):
    for _ in range(batch_ndim):
        core = _vmap(core)
    return core


def _vmap(f):
    import jax

    return jax.vmap(f)


def _split(operands, pullback: Pullback):
    n_in, n_out = len(pullback.node.inputs), len(pullback.node.outputs)
    return operands[:n_in], operands[n_in : n_in + n_out], operands[n_in + n_out :]


def _batch_ndim(operands, pullback: Pullback) -> int:
    import jax.numpy as jnp

    n_in = len(pullback.node.inputs)
    y = operands[n_in]  # an output: every operand has the same leading batch dimensions
    return jnp.ndim(y) - _core_ndim(pullback.node.outputs[0])


def _pushforward(*operands, pullback: Pullback, wrt: tuple[int, ...]):
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


def _pushforward_transpose(cotangents, *operands, pullback: Pullback, wrt):
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


def _pushforward_jvp(primals, tangents, *, pullback: Pullback, wrt):
    import jax
    from jax.interpreters import ad

    tangents = tuple(ad.instantiate_zeros(t) for t in tangents)
    pushforward = functools.partial(_pushforward, pullback=pullback, wrt=wrt)
    return jax.jvp(pushforward, tuple(primals), tangents)


def _pushforward_batch(operands, dims, *, pullback: Pullback, wrt):
    """Under ``vmap``: the batch axis first on every operand (broadcast where absent), which
    the primitive takes as one more leading batch dimension."""
    import jax.numpy as jnp

    size = next(jnp.shape(x)[d] for x, d in zip(operands, dims, strict=True) if d is not None)
    moved = [
        jnp.broadcast_to(x, (size, *jnp.shape(x))) if d is None else jnp.moveaxis(x, d, 0)
        for x, d in zip(operands, dims, strict=True)
    ]
    out = pushforward_primitive().bind(*moved, pullback=pullback, wrt=wrt)
    return out, [0] * len(out)


def _pushforward_abstract(*avals, pullback: Pullback, wrt):
    # The tangent of an output has its primal's type: shape (batch included), dtype, sharding
    # and the mesh axes it varies over.
    n_in = len(pullback.node.inputs)
    return [avals[n_in + j].strip_weak_type() for j in pullback.known]


@once
def pushforward_primitive():
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
