"""The op PyMC's test uses as its likelihood; its func_files resolve against this directory."""

import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.tensor.type import TensorType

from libsection.pytensor import ExternalCOp


class NegHalfSquare(ExternalCOp):
    """z = -x**2 / 2 elementwise for a float64 vector, in C; its gradient in PyTensor terms."""

    __props__ = ()

    def __init__(self):
        super().__init__("negHalfSquare.c", "APPLY_SPECIFIC(neg_half_square)")

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        if x.type.ndim != 1 or x.type.dtype != "float64":
            raise TypeError(f"x must be a float64 vector, not {x.type}")
        return Apply(self, [x], [TensorType("float64", shape=(None,))()])

    # PyTensor 3.0 and 3.3 both call `pullback` (3.3 deprecates `grad`/`L_op` with a warning).
    def pullback(self, inputs, outputs, cotangents):
        (x,), (g,) = inputs, cotangents
        return [-x * g]
