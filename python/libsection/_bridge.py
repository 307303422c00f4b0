"""``pytensor_op``: a standalone ``libsection.ExternalCOp`` as a PyTensor op (the bridge).

The bridge class of a standalone class is a drop-in op (``libsection.pytensor.ExternalCOp``)
reading the same section files, made once per standalone class: its ``make_node`` takes the
output types from the standalone op, its params are a ``ParamsType`` of the same fields, and
what the standalone class defines in PyTensor's terms (gradients, shapes, build flags) is
forwarded to it. Public through ``libsection.pytensor``.
"""

from __future__ import annotations

from pytensor.graph.basic import Apply, Variable
from pytensor.graph.type import Type
from pytensor.link.c.op import COp
from pytensor.link.c.params_type import ParamsType
from pytensor.scalar import ScalarType
from pytensor.tensor.type import TensorType

from . import _core
from ._build import BUILD_FLAGS
from ._dropin import ExternalCOp
from ._memo import Lru
from ._protocol import (
    GRADIENT_METHODS,
    call_own_infer_shape,
    has_pullback,
    infer_shape_arguments,
)
from ._types import tensor
from .op import ExternalCOp as StandaloneOp

__all__ = ["pytensor_op", "pytensor_type", "type_string"]


def type_string(type_: Type) -> str:
    """libsection's type string for a PyTensor type.

    Args:
        type_: A ``TensorType`` or a ``ScalarType``.

    Returns:
        The type string.

    Raises:
        NotImplementedError: Another type.

    Examples:
        >>> import pytensor.tensor as pt
        >>> from libsection.pytensor import type_string
        >>> type_string(pt.dmatrix().type)
        'float64[:,:]'
    """
    if isinstance(type_, TensorType):
        return tensor(type_.dtype, type_.ndim)
    if isinstance(type_, ScalarType):
        return type_.dtype
    raise NotImplementedError(f"libsection has no type string for {type_}")


def pytensor_type(type_string_: str, shape: tuple[int | None, ...] | None = None) -> Type:
    """The PyTensor type of a libsection type string.

    Args:
        type_string_: A type string (``"float64[:]"``, ``"int64"``, ``"object"``).
        shape: A tensor's static shape (None entries unknown).

    Returns:
        A ``TensorType``, a ``ScalarType`` or, for ``object``, PyTensor's generic type.

    Raises:
        ValueError: ``type_string_`` is not a type string.

    Examples:
        >>> from libsection.pytensor import pytensor_type
        >>> t = pytensor_type("float32[:,:]", shape=(2, None))
        >>> t.dtype, t.shape
        ('float32', (2, None))
    """
    from pytensor.link.c.type import generic

    spec = _core.parse_type(type_string_)  # the library's own reader: bad strings raise there
    if spec.kind == _core.TypeSpec.Kind.tensor:
        return TensorType(spec.dtype, shape=shape if shape is not None else (None,) * spec.ndim)
    if spec.kind == _core.TypeSpec.Kind.scalar:
        return ScalarType(spec.dtype)
    return generic


# One bridge class per standalone class, for good: ops of one class must be of one class.
_bridged_classes: Lru[type, type] = Lru(None)

# What a standalone class may define in PyTensor's terms and the bridge forwards as it is.
_FORWARDED = ("connection_pattern", "pushforward", "R_op")


def _bridged_infer_shape(self, *args):
    """PyTensor's ``infer_shape``, in either convention, reaching the standalone op in its own."""
    fgraph, node, shapes = infer_shape_arguments(args)
    return call_own_infer_shape(self.standalone.infer_shape, fgraph, node, shapes)


def pytensor_op(standalone: StandaloneOp) -> COp:
    r"""A PyTensor op running the same section files as a standalone ``libsection.ExternalCOp``.

    Its ``make_node`` takes the output types from the standalone op's ``output_types``; 0-d
    tensor inputs become PyTensor scalars (the C code receives a number, as standalone), except
    where the op's C function takes an array (``PyArrayObject*``) for one; the
    standalone op's params become a ``ParamsType`` of the same fields. Gradients and shapes
    come from the standalone class when it defines them in PyTensor's terms (``pullback``,
    ``L_op`` or ``grad``; ``pushforward`` or ``R_op``; ``infer_shape``;
    ``connection_pattern``), and ``infer_shape`` also gives the outputs their static shapes.

    Args:
        standalone: The op, an instance of a ``libsection.ExternalCOp`` subclass.

    Returns:
        A ``libsection.pytensor.ExternalCOp`` (one class per standalone class) to apply to
        PyTensor variables, in every mode.

    Examples:
        >>> import pytensor, pytensor.scalar as ps, libsection
        >>> from pathlib import Path
        >>> from libsection.pytensor import pytensor_op
        >>> _ = Path("twice.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n")
        >>> class Twice(libsection.ExternalCOp):
        ...     func_files = ["twice.c"]
        ...
        ...     def output_types(self, x: str) -> list[str]:
        ...         return [x]
        >>> x = ps.float64("x")
        >>> f = pytensor.function([x], pytensor_op(Twice())(x), mode="NUMBA")
        >>> print(f(1.5))
        3.0
    """
    cls = _bridged_classes.get_or_make(type(standalone), lambda: _bridge_class(type(standalone)))
    return cls(standalone)


def _forward(name: str):
    def method(self, *args, **kwargs):
        return getattr(self.standalone, name)(*args, **kwargs)

    method.__name__ = name
    return method


def _add_gradient(bridged, standalone_cls) -> None:
    """The standalone class's gradient, whichever of PyTensor's names it uses: ``pullback``
    (PyTensor 3), ``L_op`` or ``grad``. Where PyTensor has ``pullback`` the bridge defines
    that, so PyTensor does not warn about the older names."""
    if not has_pullback():  # an older PyTensor: its own names, as they are
        for name in reversed(GRADIENT_METHODS):
            if hasattr(standalone_cls, name):
                setattr(bridged, name, _forward(name))
        return
    if hasattr(standalone_cls, "pullback"):
        bridged.pullback = _forward("pullback")
    elif hasattr(standalone_cls, "L_op"):

        def pullback(self, inputs, outputs, cotangents):
            return self.standalone.L_op(inputs, outputs, cotangents)

        bridged.pullback = pullback
    elif hasattr(standalone_cls, "grad"):

        def pullback(self, inputs, outputs, cotangents):
            return self.standalone.grad(inputs, cotangents)

        bridged.pullback = pullback


def _static_shapes(op, node) -> list[tuple | None]:
    """Static output shapes from the standalone ``infer_shape`` where it gives constants."""
    from pytensor.tensor.basic import get_underlying_scalar_constant_value
    from pytensor.tensor.exceptions import NotScalarConstantError

    in_shapes = []
    for v in node.inputs:
        if isinstance(v.type, TensorType):
            in_shapes.append(
                tuple(s if s is not None else v.shape[i] for i, s in enumerate(v.type.shape))
            )
        else:
            in_shapes.append(())
    out: list[tuple | None] = []
    for shape in call_own_infer_shape(op.standalone.infer_shape, None, node, in_shapes):
        dims: list[int | None] = []
        for d in shape:
            try:
                dims.append(int(get_underlying_scalar_constant_value(d)))
            except (NotScalarConstantError, TypeError, ValueError):
                dims.append(None)
        out.append(tuple(dims))
    return out


def _forward_build_flag(name: str):
    """A drop-in method giving what the standalone op's method of that name gives, checked and
    with folders made absolute as the standalone op builds with them."""

    def method(self, **kwargs):
        return self.standalone.build_flags()[name]

    method.__name__ = name
    return method


def _bridge_class(standalone_cls):
    from pytensor.tensor import as_tensor_variable
    from pytensor.tensor.basic import scalar_from_tensor

    param_names = tuple(standalone_cls.params)

    class Bridged(ExternalCOp):
        __props__ = param_names
        _cop_num_inputs = standalone_cls._cop_num_inputs
        _cop_num_outputs = standalone_cls._cop_num_outputs
        check_input = standalone_cls.check_input
        vmap_method = standalone_cls.vmap_method
        if standalone_cls.gufunc_signature is not None:
            gufunc_signature = standalone_cls.gufunc_signature

        def __init__(self, standalone):
            self.standalone = standalone
            for name in param_names:
                setattr(self, name, getattr(standalone, name))
            files = [standalone.get_path(f) for f in standalone.func_files]
            super().__init__(files, standalone.func_name)

        @property
        def params_type(self):
            if not param_names:
                return None
            return ParamsType(**{n: pytensor_type(t) for n, t in standalone_cls.params.items()})

        def make_node(self, *inputs):
            takes = self._main_function_takes()
            variables = []
            for i, x in enumerate(inputs):
                v = x if isinstance(x, Variable) else as_tensor_variable(x)
                array = i < len(takes) and takes[i] == "array"
                if isinstance(v.type, TensorType) and v.type.ndim == 0 and not array:
                    v = scalar_from_tensor(v)
                variables.append(v)
            types = [type_string(v.type) for v in variables]
            outputs = [pytensor_type(t) for t in self.standalone.output_types(*types)]
            node = Apply(self, variables, [t() for t in outputs])
            if not hasattr(self.standalone, "infer_shape"):
                return node
            shapes = _static_shapes(self, node)
            typed = [
                pytensor_type(t, s) if isinstance(ty, TensorType) and len(s) == ty.ndim else ty
                for t, ty, s in zip(
                    self.standalone.output_types(*types), outputs, shapes, strict=True
                )
            ]
            return Apply(self, variables, [t() for t in typed])

        def _main_function_takes(self) -> list[str]:
            """Per input, what the op's C function takes (``_core.main_function_takes``):
            where it takes an array, a 0-d tensor stays one."""
            if self.func_name is None:
                return []
            return _core.main_function_takes(self._sections, self.func_name) or []

        def __reduce__(self):
            return pytensor_op, (self.standalone,)

    for name in _FORWARDED:
        if hasattr(standalone_cls, name):
            setattr(Bridged, name, _forward(name))
    for name in BUILD_FLAGS:  # PyTensor asks them of the node's op: the standalone op's own
        if getattr(standalone_cls, name) is not getattr(StandaloneOp, name):
            setattr(Bridged, name, _forward_build_flag(name))
    if hasattr(standalone_cls, "infer_shape"):
        Bridged.infer_shape = _bridged_infer_shape
    _add_gradient(Bridged, standalone_cls)
    Bridged.__name__ = Bridged.__qualname__ = standalone_cls.__name__
    Bridged.__module__ = standalone_cls.__module__
    return Bridged
