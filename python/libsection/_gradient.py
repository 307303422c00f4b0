"""Derivatives from an op's own C code: the forward pass is written once.

An op without a gradient of its own (no ``pullback``, ``L_op`` or ``grad``) whose values are
written with the generated DTYPE macros gets exact derivatives when PyTensor asks for them:
its C code is compiled a second time, in a module of its own, with the ``DTYPE_INPUT_i`` and
``DTYPE_OUTPUT_i`` of its float inputs and outputs naming a dual number (a value and tangents)
or a taped number. That module is built only when a derivative is first asked for, through the
same route, cache and checks as every module; the op's own module does not change. An op has
one pullback module and one pushforward module whatever its inputs' static shapes.

- ``pullback`` (PyTensor's reverse mode, ``pt.grad``, samplers): a ``DerivedGradient`` node.
  For a few differentiated scalars P its C code runs the op's code once per ``WIDTH`` of them,
  each pass seeding unit tangents, and contracts the outputs' tangents with the cotangents (a
  vector-Jacobian product from forward passes, exact to rounding); for more it runs the op's
  code once on taped numbers and sweeps the tape backwards (reverse mode). The linker core
  picks per call, from P.
- ``pushforward`` (``R_op``, forward mode): a ``DerivedPushforward`` node, one pass with the
  given tangents.

Both nodes take the forward op's output values as inputs and check the values of their pass on
dual numbers against them: they differ only where the code hides the duals from their
derivatives (a memcpy of ``n * sizeof(double)``), which raises a ``ValueError`` naming the op,
the output and the element rather than giving a wrong derivative.

Inputs that carry no derivative stay plain: integers (their gradient is undefined), and
constants (nothing asks for their gradient). A graph rewrite narrows a gradient node to the
inputs whose gradient the compiled function uses, so data given as an input costs no pass.
"""

from __future__ import annotations

from typing import Any

from pytensor.graph.basic import Apply, Constant, Variable
from pytensor.link.c.op import COp

from . import _backends, _batched, _dropin
from ._build import LinkError
from ._dropin import ExternalCOp
from ._node import BuiltByTheCore, COpAdapter
from ._protocol import CODE_METHODS, RESHAPING_METHODS, own_method

__all__ = [
    "Derivative",
    "DerivedGradient",
    "DerivedPushforward",
    "TapedValues",
    "pullback",
    "pushforward",
]

WIDTH = 8
"""The tangents each forward pass of a pullback carries, whatever the inputs' static shapes:
one module per op (a narrower pass costs about as much, measured with 3 scalars)."""

_FLOATS = ("float32", "float64")


def _dtype(variable) -> str | None:
    return getattr(variable.type, "dtype", None)


# ---------------------------------------------------------------- which gradient the op has


def _own(op, name: str):
    """The op's own ``name`` method (``pullback``, ``L_op``, ``grad``, ...) when its class
    defines one, not libsection's drop-in nor PyTensor's default; else None."""
    return own_method(op, name, ExternalCOp)


def pullback(op, inputs, outputs, cotangents) -> list:
    """The drop-in's gradient: the op's own (``pullback``, ``L_op``, ``grad``, whichever its
    class defines) or one derived from its C code."""
    own = _own(op, "pullback") or _own(op, "L_op")
    if own is not None:
        return own(inputs, outputs, cotangents)
    grad = _own(op, "grad")
    if grad is not None:
        return grad(inputs, cotangents)
    return _derived_pullback(op, list(inputs), list(outputs), list(cotangents))


def pushforward(op, inputs, outputs, tangents) -> list:
    """The drop-in's Jacobian-vector product: the op's own (``pushforward`` or ``R_op``) or
    one derived from its C code. ``tangents`` has a ``DisconnectedType`` variable (or None,
    as ``R_op`` takes them) for an input not differentiated."""
    from pytensor.gradient import disconnected_type

    own = _own(op, "pushforward")
    if own is not None:
        return own(inputs, outputs, tangents)
    own = _own(op, "R_op")
    if own is not None:
        points = [None if _disconnected(t) else t for t in tangents]
        return [disconnected_type() if r is None else r for r in own(inputs, points)]
    return _derived_pushforward(op, list(inputs), list(outputs), list(tangents))


def r_op(op, inputs, eval_points) -> list:
    """``R_op`` in its own convention (``None`` for an input not differentiated, and for an
    output without a tangent)."""
    from pytensor.gradient import disconnected_type

    outputs = op.make_node(*inputs).outputs
    tangents = [disconnected_type() if p is None else p for p in eval_points]
    return [None if _disconnected(r) else r for r in pushforward(op, inputs, outputs, tangents)]


def _disconnected(variable) -> bool:
    from pytensor.gradient import DisconnectedType
    from pytensor.graph.null_type import NullType

    return variable is None or isinstance(variable.type, (DisconnectedType, NullType))


def _derivable(op) -> None:
    """Raises when the op's C code cannot be rebuilt on dual numbers: methods overridden in
    Python that give it text of their own (which would not have the dual numbers' element
    macros)."""
    cls = type(op)
    own = [m for m in (*CODE_METHODS, *RESHAPING_METHODS) if _dropin.overridden(cls, m)]
    if own:
        raise NotImplementedError(
            f"{cls.__name__} has no gradient of its own, and libsection cannot derive one from "
            f"its C code: it overrides {', '.join(own)} in Python, whose text libsection cannot "
            f"recompile on dual numbers. Define pullback(self, inputs, outputs, cotangents) on "
            f"{cls.__name__}, or move that code into its section files."
        )


# ---------------------------------------------------------------- pullback


def _derived_pullback(op, inputs, outputs, cotangents) -> list:
    import pytensor.tensor as pt
    from pytensor.gradient import grad_not_implemented, grad_undefined

    _derivable(op)
    differentiated = [_dtype(x) in _FLOATS and not isinstance(x, Constant) for x in inputs]
    given = [
        _dtype(y) in _FLOATS and not _disconnected(g)
        for y, g in zip(outputs, cotangents, strict=True)
    ]
    result: list[Any] = []
    for i, x in enumerate(inputs):
        dtype = _dtype(x)
        if differentiated[i]:
            result.append(None)
        elif isinstance(x, Constant):
            result.append(grad_undefined(op, i, x, "libsection derives no gradient for a constant"))
        elif dtype is not None and dtype.startswith(("int", "uint", "bool")):
            result.append(grad_undefined(op, i, x, "an integer input has no derivative"))
        else:
            result.append(
                grad_not_implemented(
                    op,
                    i,
                    x,
                    f"libsection derives gradients of float32 and float64 inputs, not {x.type}",
                )
            )
    if any(differentiated) and any(given):
        output_types = tuple(y.type for y in outputs)
        refused = _refused_inputs(op, inputs, output_types, differentiated, given)
        for i, why in refused.items():
            differentiated[i] = False
            result[i] = grad_not_implemented(op, i, inputs[i], why)
    if any(differentiated):
        if any(given):
            node = DerivedGradient(
                op,
                tuple(differentiated),
                tuple(given),
                tuple(y.type for y in outputs),
            )(
                *inputs,
                *[g for g, present in zip(cotangents, given, strict=True) if present],
                *[y for y, present in zip(outputs, given, strict=True) if present],
            )
            grads = iter(node if isinstance(node, list) else [node])
            result = [next(grads) if r is None else r for r in result]
        else:  # only integer outputs are connected: their derivative is zero, exactly
            result = [
                pt.zeros_like(x) if r is None else r for x, r in zip(inputs, result, strict=True)
            ]
    return result


def _refused_inputs(op, inputs, output_types, differentiated, given) -> dict[int, str]:
    """The inputs whose derivatives the op's files hide (a cast of their data to a plain
    ``double``, SL306), each with the refusal: their gradient is not implemented, the others'
    is derived. Raises the refusal when a cast concerns every input (one of an output's data,
    or of an array the files do not name). The linker core tells which, as data."""
    dual_outputs = [t.dtype in _FLOATS for t in output_types]
    refusals = _dropin.derivative_refusals(op, differentiated, dual_outputs)
    if refusals["every"]:
        raise _link_error(refusals["all"])
    return {i: refusal["message"] for i, refusal in refusals["inputs"].items()}


def _link_error(refusal) -> Exception:
    """The ``LinkError`` of a refusal (its message, at the files' lines, and its diagnostics)."""
    error: Any = LinkError(refusal["message"])
    error.diagnostics = refusal["diagnostics"]
    return error


class Derivative(BuiltByTheCore, COp):
    """What the derived gradient and pushforward ops share: a node built by libsection's
    linker core from the forward op's sections (a differentiated module), run in every mode
    as a drop-in node is."""

    __props__: tuple[str, ...] = (
        "forward",
        "differentiated",
        "cotangents",
        "output_types",
    )
    mode = ""

    def __init__(self, forward, differentiated, cotangents, output_types):
        self.forward = forward
        self.differentiated = tuple(bool(d) for d in differentiated)
        self.cotangents = tuple(bool(c) for c in cotangents)
        self.output_types = tuple(output_types)

    def __str__(self) -> str:
        return f"{type(self.forward).__name__}.{self.mode}"

    @property
    def params_type(self):
        return self.forward.params_type

    def get_params(self, node):
        return self.forward.get_params(self._forward_node(node))

    def _forward_node(self, node) -> Apply:
        n = len(self.differentiated)
        return Apply(self.forward, list(node.inputs[:n]), [t() for t in self.output_types])

    def _node_op(self, python):
        """The linker core's op of this node: the forward op's node op (``_dropin.node_op``)
        on dual numbers, asked for the forward node's methods."""
        _derivable(self.forward)
        forward = COpAdapter(self.forward, self._forward_node(python.node))
        return _dropin.derivative_node_op(
            self.forward,
            forward,
            self.output_types,
            list(self.differentiated),
            list(self.cotangents),
            WIDTH if self.mode in ("pullback", "record") else 1,
            self.mode,
        )

    # ------------------------------------------------------------ running in every mode

    def c_code(self, node, name, inputs, outputs, sub):
        # Its code is the linker core's (make_c_thunk), never PyTensor's C linker's.
        raise NotImplementedError(f"{self} is compiled by libsection's linker core")

    # ------------------------------------------------------------ its own derivatives

    def _not_second(self, i, x):
        from pytensor.gradient import grad_not_implemented

        return grad_not_implemented(
            self,
            i,
            x,
            f"libsection derives first derivatives of {type(self.forward).__name__} from its C "
            "code, not second ones: give the op a pullback whose graph PyTensor can "
            "differentiate to take derivatives of its gradient",
        )

    def L_op(self, inputs, outputs, output_grads):  # what PyTensor before 3.3 asks for
        return self.pullback(inputs, outputs, output_grads)


class DerivedGradient(Derivative):
    """The vector-Jacobian product of ``forward`` from its C code. Inputs: ``forward``'s, then
    the cotangent of each output ``cotangents`` marks, then that output's value (each pass's
    values on dual numbers must equal it, else the code handles duals as plain floats and the
    gradient is refused when it runs). Outputs: the gradient of each input ``differentiated``
    marks, each of its input's type."""

    mode = "pullback"

    def make_node(self, *inputs):
        n = len(self.differentiated)
        variables = [x if isinstance(x, Variable) else _as_variable(x) for x in inputs]
        outputs = [variables[i].type() for i in range(n) if self.differentiated[i]]
        return Apply(self, variables, outputs)

    def infer_shape(self, *args):
        shapes = args[-1]
        return [shapes[i] for i, d in enumerate(self.differentiated) if d]

    def connection_pattern(self, node):
        # The outputs' values (the last inputs) are only compared with.
        connected = len(self.differentiated) + sum(self.cotangents)
        return [[k < connected] * len(node.outputs) for k in range(len(node.inputs))]

    def pullback(self, inputs, outputs, cotangents):
        """Linear in the cotangents: their gradient is the forward op's Jacobian-vector product
        with this gradient's cotangents (a pushforward, one pass). The inputs' own would be
        second derivatives, which are not derived."""
        n = len(self.differentiated)
        forward_inputs = list(inputs[:n])
        tangents = iter(cotangents)
        directions = [next(tangents) if d else None for d in self.differentiated]
        given = [
            d and not _disconnected(u) for d, u in zip(self.differentiated, directions, strict=True)
        ]
        from pytensor.gradient import disconnected_type

        result = [self._not_second(i, x) for i, x in enumerate(forward_inputs)]
        cotangent_inputs = list(inputs[n : n + sum(self.cotangents)])
        # The outputs' values are only compared with: the gradient does not depend on them.
        values = [disconnected_type() for _ in inputs[n + sum(self.cotangents) :]]
        if not any(given):
            return result + [disconnected_type() for _ in cotangent_inputs] + values
        at_hand = iter(inputs[n + sum(self.cotangents) :])
        known = {j: next(at_hand) for j, c in enumerate(self.cotangents) if c}
        jvp = _pushforward_node(
            self.forward,
            forward_inputs,
            given,
            [u for u, g in zip(directions, given, strict=True) if g],
            self.output_types,
            _float_values(self.forward, forward_inputs, self.output_types, known),
        )
        by_output = iter(jvp)
        float_tangents = [
            next(by_output) if t.dtype in _FLOATS else None for t in self.output_types
        ]
        return result + [float_tangents[j] for j, c in enumerate(self.cotangents) if c] + values


class DerivedPushforward(Derivative):
    """The Jacobian-vector product of ``forward`` from its C code. Inputs: ``forward``'s, then
    the tangent of each input ``differentiated`` marks, then the value of each float output
    (the pass's values on dual numbers must equal it, else the product is refused when it
    runs). Outputs: the tangent of each float output of ``forward``."""

    mode = "pushforward"

    def make_node(self, *inputs):
        variables = [x if isinstance(x, Variable) else _as_variable(x) for x in inputs]
        outputs = [t() for t in self.output_types if t.dtype in _FLOATS]
        return Apply(self, variables, outputs)

    def _values_start(self) -> int:
        return len(self.differentiated) + sum(self.differentiated)

    def infer_shape(self, *args):
        # Each tangent has its output's shape: that of its value, the last inputs.
        return list(args[-1][self._values_start() :])

    def connection_pattern(self, node):
        # The outputs' values are only compared with.
        return [[k < self._values_start()] * len(node.outputs) for k in range(len(node.inputs))]

    def pullback(self, inputs, outputs, cotangents):
        """Linear in the tangents: their gradient is the forward op's vector-Jacobian product
        with this pushforward's cotangents. The inputs' own would be second derivatives."""
        n = len(self.differentiated)
        forward_inputs = list(inputs[:n])
        result = [self._not_second(i, x) for i, x in enumerate(forward_inputs)]
        floats = [t.dtype in _FLOATS for t in self.output_types]
        ws = iter(cotangents)
        weights = [next(ws) if f else None for f in floats]
        given = [f and not _disconnected(w) for f, w in zip(floats, weights, strict=True)]
        from pytensor.gradient import disconnected_type

        # The outputs' values are only compared with: the product does not depend on them.
        values = inputs[self._values_start() :]
        unused = [disconnected_type() for _ in values]
        if not any(given):
            return result + [disconnected_type() for d in self.differentiated if d] + unused
        by_output = iter(values)
        float_values = [next(by_output) if f else None for f in floats]
        grads = DerivedGradient(
            self.forward,
            self.differentiated,
            tuple(given),
            self.output_types,
        )(
            *forward_inputs,
            *[w for w, g in zip(weights, given, strict=True) if g],
            *[y for y, g in zip(float_values, given, strict=True) if g],
        )
        return result + (grads if isinstance(grads, list) else [grads]) + unused


class TapedValues(Derivative):
    """``forward``'s outputs, computed for the pullback of the same function (a
    ``DerivedGradient`` node of the same inputs, which a rewrite pairs it with): where that
    pullback will run in reverse mode, one pass of the op's code on taped numbers gives the
    values and leaves its tape for the pullback to sweep, so a value and gradient cost one
    taped pass and a sweep rather than the op's pass, a taped pass and a sweep; else the op's
    code on plain numbers. Inputs and outputs are ``forward``'s. The first taped call of an
    instance also runs the plain pass and keeps to plain passes if the values differ past
    rounding."""

    mode = "record"

    def make_node(self, *inputs):
        variables = [x if isinstance(x, Variable) else _as_variable(x) for x in inputs]
        return Apply(self, variables, [t() for t in self.output_types])

    def infer_shape(self, *args):  # (fgraph, node, shapes) before PyTensor 3.3, then (node, shapes)
        """``forward``'s, on its node."""
        own = getattr(self.forward, "infer_shape", None)
        if own is None:  # PyTensor then reads the shapes from the outputs
            from pytensor.tensor.exceptions import ShapeError

            name = type(self.forward).__name__
            raise ShapeError(
                f"libsection: the shapes of {name}'s outputs are needed before running it (JAX "
                f"allocates them): define infer_shape(self, fgraph, node, input_shapes) on "
                f"{name}, or give its outputs static shapes"
            )
        return own(*args[:-2], self._forward_node(args[-2]), args[-1])


def _as_variable(x):
    import pytensor.tensor as pt

    return pt.as_tensor_variable(x)


def _derived_pushforward(op, inputs, outputs, tangents) -> list:
    from pytensor.gradient import disconnected_type

    _derivable(op)
    differentiated = [
        _dtype(x) in _FLOATS and not _disconnected(t) for x, t in zip(inputs, tangents, strict=True)
    ]
    if not any(differentiated):
        return [disconnected_type() for _ in outputs]
    given = [
        t.astype(x.type.dtype) if _dtype(t) != _dtype(x) else t
        for x, t, d in zip(inputs, tangents, differentiated, strict=True)
        if d
    ]
    output_types = [y.type for y in outputs]
    # Refused here, where the product is asked for, not when the function compiles.
    refusals = _dropin.derivative_refusals(
        op, differentiated, [t.dtype in _FLOATS for t in output_types]
    )
    if refusals["all"] is not None:
        raise _link_error(refusals["all"])
    values = [y for y in outputs if _dtype(y) in _FLOATS]
    results = iter(_pushforward_node(op, inputs, differentiated, given, output_types, values))
    return [next(results) if _dtype(y) in _FLOATS else disconnected_type() for y in outputs]


def _pushforward_node(op, inputs, differentiated, tangents, output_types, values) -> list:
    """The tangents of ``op``'s float outputs for ``tangents`` of the inputs ``differentiated``
    marks (a ``DerivedPushforward`` node), whose pass is checked against ``values`` (of each
    float output, as ``op`` computes them)."""
    out = DerivedPushforward(
        op, tuple(differentiated), (False,) * len(output_types), tuple(output_types)
    )(*inputs, *tangents, *values)
    return out if isinstance(out, list) else [out]


def _float_values(op, inputs, output_types, known) -> list:
    """The values of ``op``'s float outputs on ``inputs``: ``known[j]`` for output j where at
    hand, else an output of a node of ``op`` (made only if needed)."""
    missing = [j for j, t in enumerate(output_types) if t.dtype in _FLOATS and j not in known]
    if missing:
        outputs = op.make_node(*inputs).outputs
        known = {**{j: outputs[j] for j in missing}, **known}
    return [known[j] for j, t in enumerate(output_types) if t.dtype in _FLOATS]


# ---------------------------------------------------------------- pruning unused gradients


def _register_pruning() -> None:
    """A rewrite in every mode (canonicalize, which FAST_COMPILE runs too): a gradient node
    whose outputs the function does not all use is replaced by one that differentiates only the
    inputs it uses, so data given as inputs costs no pass; so is a batched one (a
    ``Blockwise`` of a gradient node: a batched op's gradient)."""
    from pytensor.graph.rewriting.basic import node_rewriter
    from pytensor.tensor.blockwise import Blockwise
    from pytensor.tensor.rewriting.basic import register_canonicalize

    @node_rewriter([DerivedGradient, Blockwise])
    def libsection_derived_gradient_unused(fgraph, node):
        op = node.op
        gradient = op.core_op if isinstance(op, Blockwise) else op
        if not isinstance(gradient, DerivedGradient):
            return None
        used = [bool(fgraph.clients.get(out)) for out in node.outputs]
        if all(used) or not any(used):
            return None
        keep = iter(used)
        differentiated = tuple(d and next(keep) for d in gradient.differentiated)
        narrow: Any = DerivedGradient(
            gradient.forward, differentiated, gradient.cotangents, gradient.output_types
        )
        if isinstance(op, Blockwise):
            outputs = [dims for dims, u in zip(op.outputs_sig, used, strict=True) if u]
            narrow = Blockwise(narrow, _batched.format_signature(op.inputs_sig, outputs))
        new = narrow.make_node(*node.inputs).outputs
        kept = iter(new)
        return {out: next(kept) for out, u in zip(node.outputs, used, strict=True) if u}

    register_canonicalize(libsection_derived_gradient_unused)


def recordable(node: Apply) -> bool:
    """Whether a taped pass of ``node``'s op (a ``TapedValues`` node) may give its values for
    a pullback to sweep: the op has no params (its values are its inputs' alone) and its inputs
    and outputs are tensors and scalars, whose bytes find the recording. The one rule the
    rewrite below and the JAX jvp (``_jax.py``) follow; the linker core checks params again."""
    from pytensor.scalar import ScalarType
    from pytensor.tensor.type import TensorType

    if getattr(node.op, "params_type", None) is not None:
        return False
    plain = (TensorType, ScalarType)
    return all(isinstance(v.type, plain) for v in (*node.inputs, *node.outputs))


def _register_recording() -> None:
    """A rewrite in every mode (canonicalize): the op's node whose values a pullback of the same
    inputs takes (the one ``DerivedGradient`` among its clients) becomes a ``TapedValues``
    node, whose taped pass that pullback sweeps. Not for a batched pullback (each row would
    record), nor an op with params (its values are not its inputs' alone)."""
    from pytensor.graph.rewriting.basic import node_rewriter
    from pytensor.tensor.rewriting.basic import register_canonicalize

    @node_rewriter([DerivedGradient])
    def libsection_record_for_pullback(fgraph, node):
        gradient = node.op
        if type(gradient) is not DerivedGradient:
            return None
        n = len(gradient.differentiated)
        values = node.inputs[n + sum(gradient.cotangents) :]
        forward = values[0].owner if values else None
        if forward is None or list(forward.inputs) != list(node.inputs[:n]):
            return None
        if isinstance(forward.op, TapedValues):
            if forward.op.forward != gradient.forward:
                return None
            if forward.op.differentiated == gradient.differentiated:
                return None
        elif forward.op != gradient.forward:
            return None
        kept = [y for y, c in zip(forward.outputs, gradient.cotangents, strict=True) if c]
        if list(values) != kept or not recordable(forward):
            return None
        pullbacks = {
            client
            for y in forward.outputs
            for client, _ in fgraph.clients.get(y, ())
            if isinstance(getattr(client, "op", None), DerivedGradient)
            or isinstance(getattr(getattr(client, "op", None), "core_op", None), DerivedGradient)
        }
        if pullbacks != {node}:
            return None
        record = TapedValues(
            gradient.forward,
            gradient.differentiated,
            (False,) * len(gradient.output_types),
            gradient.output_types,
        )
        new = record.make_node(*forward.inputs).outputs
        return dict(zip(forward.outputs, new, strict=True))

    register_canonicalize(libsection_record_for_pullback)


_register_pruning()
_register_recording()

_backends.register(Derivative, lambda op: False)
