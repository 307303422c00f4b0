"""What PyTensor's CLinker gets from an ExternalCOp-style op's c_* methods, for comparisons.

`linker_strings(op_class, ...)` builds a single-node graph, lets PyTensor's own `CLinker`
generate the module source, and records the string every `c_*` method returned on the way.
"""

import re

import numpy as np
import pytensor.scalar as ps
from pytensor.graph.basic import Apply
from pytensor.graph.fg import FunctionGraph
from pytensor.link.c.basic import CLinker
from pytensor.link.c.params_type import ParamsType
from pytensor.link.c.type import generic
from pytensor.tensor.type import TensorType

METHODS = (
    "c_init_code",
    "c_support_code",
    "c_init_code_apply",
    "c_support_code_apply",
    "c_support_code_struct",
    "c_cleanup_code_struct",
    "c_init_code_struct",
    "c_code",
    "c_code_cleanup",
)

_TYPE_RE = re.compile(r"^(\w+)(?:\[(:(?:,:)*)\])?$")


def pytensor_type(spec):
    """`float64[:]` -> vector type, `int64` -> scalar type, `object` -> generic."""
    if spec == "object":
        return generic
    m = _TYPE_RE.match(spec.replace(" ", ""))
    if m is None:
        raise ValueError(f"bad type {spec!r}")
    dtype, dims = m.groups()
    if dims is None:
        return ps.ScalarType(dtype)
    return TensorType(dtype, shape=(None,) * (dims.count(":")))


def split_types(text):
    """`float64[:],int64` -> ["float64[:]", "int64"] (commas inside brackets kept)."""
    return [t for t in re.split(r",(?![^\[]*\])", text) if t] if text else []


def param_value(type_):
    if type_ is generic:
        return "a Python object"
    if isinstance(type_, TensorType):
        return np.zeros((1,) * type_.ndim, dtype=type_.dtype)
    return np.dtype(type_.dtype).type(1)


def make_op_class(
    base, name="Probe", params=None, check_input=True, num_inputs=None, num_outputs=None
):
    """A subclass of `base` (PyTensor's ExternalCOp or the drop-in) taking its types at init."""
    attrs = {
        "__props__": (),
        "check_input": check_input,
        "_cop_num_inputs": num_inputs,
        "_cop_num_outputs": num_outputs,
    }
    if params:
        fields = {n: pytensor_type(t) for n, t in params}
        attrs["params_type"] = ParamsType(**fields)
        attrs.update({n: param_value(t) for n, t in fields.items()})

    def __init__(self, files, func_name, inputs, outputs):
        base.__init__(self, files, func_name)
        self.in_types = [pytensor_type(t) for t in inputs]
        self.out_types = [pytensor_type(t) for t in outputs]

    def make_node(self, *xs):
        return Apply(self, list(xs), [t() for t in self.out_types])

    def perform(self, node, inputs, outputs):
        raise NotImplementedError

    attrs.update(__init__=__init__, make_node=make_node, perform=perform)
    return type(name, (base,), attrs)


def linker_strings(op):
    """Every c_* method's string as PyTensor's CLinker got it for a single-node graph of `op`."""
    recorded = {}

    def recorder(method):
        original = getattr(op, method)

        def wrapper(*args, **kwargs):
            result = original(*args, **kwargs)
            recorded[method] = result
            return result

        return wrapper

    for method in METHODS:
        setattr(op, method, recorder(method))
    try:
        inputs = [t() for t in op.in_types]
        node = op.make_node(*inputs)
        fgraph = FunctionGraph(inputs, node.outputs, clone=False)
        CLinker().accept(fgraph).get_src_code()
    finally:
        for method in METHODS:
            delattr(op, method)
    return recorded
