"""How ``libsection.pytensor.ExternalCOp`` runs outside PyTensor's C backend.

``perform`` builds the op's own C code through libsection's linker core (once per input and
output types; the module is cached on disk) and calls it, so the Python linker
(``FAST_COMPILE``) and Numba (``NUMBA``, PyTensor 3's default ``FAST_RUN``) run exactly the
code the C backend runs. Numba calls it from object mode, registered here so that PyTensor
does not warn about a fallback.
"""

from __future__ import annotations

from typing import Any

from pytensor.link.c.params_type import ParamsType
from pytensor.scalar import ScalarType
from pytensor.tensor.type import TensorType

from . import _core
from ._build import build
from .op import tensor

# (op, input types, output types) -> compiled op. Equal ops (same class and __props__) run
# the same C code, so they share modules.
_compiled: dict[tuple, Any] = {}


def type_string(type_) -> str:
    """libsection's type string for a PyTensor type (``TensorType`` or ``ScalarType``)."""
    if isinstance(type_, TensorType):
        if type_.ndim == 0:
            raise NotImplementedError(
                "libsection runs ops on 0-d tensors only in PyTensor's C backend (mode='CVM'); "
                "use a ScalarType input or a 1-d tensor")
        return tensor(type_.dtype, type_.ndim)
    if isinstance(type_, ScalarType):
        return type_.dtype
    raise NotImplementedError(f"libsection cannot pass a {type_} to an op outside mode='CVM'")


def _params(op, node) -> dict[str, tuple[str, Any]] | None:
    params_type = getattr(op, "params_type", None)
    if params_type is None:
        return None
    if not isinstance(params_type, ParamsType):
        raise NotImplementedError(f"{type(op).__name__}: only ParamsType params run outside mode='CVM'")
    values = op.get_params(node)
    return {name: (type_string(type_), getattr(values, name))
            for name, type_ in zip(params_type.fields, params_type.types, strict=True)}


def compiled_for(op, node):
    inputs = tuple(type_string(v.type) for v in node.inputs)
    outputs = tuple(type_string(v.type) for v in node.outputs)
    key = (op, inputs, outputs)
    compiled = _compiled.get(key)
    if compiled is None:
        compiled = build(op._resolved_files, op.func_name, list(inputs), list(outputs),
                         _params(op, node), name=type(op).__name__,
                         num_inputs=op._cop_num_inputs, num_outputs=op._cop_num_outputs,
                         check_input=bool(getattr(op, "check_input", True)))
        _compiled[key] = compiled
    return compiled


def perform(op, node, inputs, output_storage) -> None:
    results = compiled_for(op, node)(*inputs)
    if len(output_storage) == 1:
        results = (results,)
    for storage, value in zip(output_storage, results, strict=True):
        storage[0] = value


def register_numba(op_class) -> None:
    """Numba runs ``op_class`` nodes through ``perform`` in object mode, without a warning."""
    try:
        import numba
        from pytensor.link.numba.dispatch.basic import get_numba_type, numba_funcify, numba_njit
    except ImportError:  # PyTensor without Numba: nothing to register
        return

    @numba_funcify.register(op_class)
    def _funcify(op, node, **kwargs):
        single = len(node.outputs) == 1
        out_types = [get_numba_type(o.type) for o in node.outputs]
        ret_sig = out_types[0] if single else numba.types.Tuple(out_types)
        compiled_for(op, node)  # build now, not on the first call

        def call(inputs):  # closes over op and node only: Numba pickles object-mode closures
            return compiled_for(op, node)(*inputs)

        @numba_njit
        def perform_in_object_mode(*inputs):
            with numba.objmode(ret=ret_sig):
                ret = call(inputs)
            return ret

        return perform_in_object_mode


def pytensor_type(type_string_: str):
    """The PyTensor type of a libsection type string (``float64[:]``, ``int64``, ``object``)."""
    from pytensor.link.c.type import generic

    spec = _core.parse_type(type_string_)  # the library's own reader: bad strings raise there
    if spec.kind == _core.TypeSpec.Kind.tensor:
        return TensorType(spec.dtype, shape=(None,) * spec.ndim)
    if spec.kind == _core.TypeSpec.Kind.scalar:
        return ScalarType(spec.dtype)
    return generic


_bridged_classes: dict[type, type] = {}


def pytensor_op(standalone):
    """A PyTensor op running the same section files as a standalone ``libsection.ExternalCOp``.

    Its ``make_node`` takes the output types from the standalone op's ``output_types``; 0-d
    tensor inputs become PyTensor scalars (the C code receives a number, as standalone); the
    standalone op's params become a ``ParamsType`` of the same fields.
    """
    cls = _bridged_classes.get(type(standalone))
    if cls is None:
        cls = _bridged_classes[type(standalone)] = _bridge_class(type(standalone))
    return cls(standalone)


def _bridge_class(standalone_cls):
    from pytensor.graph.basic import Apply, Variable
    from pytensor.tensor import as_tensor_variable
    from pytensor.tensor.basic import scalar_from_tensor

    from .pytensor import ExternalCOp

    param_names = tuple(standalone_cls.params)

    class Bridged(ExternalCOp):
        __props__ = param_names
        _cop_num_inputs = standalone_cls._cop_num_inputs
        _cop_num_outputs = standalone_cls._cop_num_outputs
        check_input = standalone_cls.check_input

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
            variables = []
            for x in inputs:
                v = x if isinstance(x, Variable) else as_tensor_variable(x)
                if isinstance(v.type, TensorType) and v.type.ndim == 0:
                    v = scalar_from_tensor(v)
                variables.append(v)
            types = [type_string(v.type) for v in variables]
            outputs = self.standalone.output_types(*types)
            return Apply(self, variables, [pytensor_type(t)() for t in outputs])

        def __reduce__(self):
            return pytensor_op, (self.standalone,)

    Bridged.__name__ = Bridged.__qualname__ = standalone_cls.__name__
    Bridged.__module__ = standalone_cls.__module__
    return Bridged
