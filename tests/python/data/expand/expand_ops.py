"""Ops for the drop-in's tests; their relative func_files resolve against this directory."""

import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.scalar import upcast
from pytensor.tensor.type import TensorType

from libsection.pytensor import ExternalCOp


class VectorTimesVector(ExternalCOp):
    """The tutorial op, unchanged but for the import."""

    __props__ = ()

    func_file = "../../../../ops/vector_times_vector/vectorTimesVector.c"  # relative to this file
    func_name = "APPLY_SPECIFIC(vector_times_vector)"

    def __init__(self):
        super().__init__(self.func_file, self.func_name)

    def make_node(self, x, y):
        x = pt.as_tensor_variable(x)
        y = pt.as_tensor_variable(y)
        if x.type.ndim != 1:
            raise TypeError("x must be a 1-d vector")
        if y.type.ndim != 1:
            raise TypeError("y must be a 1-d vector")
        output_var = TensorType(dtype=upcast(x.dtype, y.dtype), shape=(None,))()
        return Apply(self, [x, y], [output_var])


class UnaryVectorOp(ExternalCOp):
    """One vector in, one vector of the same type out."""

    __props__ = ("func_file",)

    def __init__(self, func_file, func_name=None):
        self.func_file = func_file
        super().__init__(func_file, func_name)

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])


class DoubleIt(UnaryVectorOp):
    """Written with a `code` section."""

    def __init__(self):
        super().__init__("double_it.c")
