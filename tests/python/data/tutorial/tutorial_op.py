"""An op written as PyTensor's ExternalCOp tutorial writes one; the import line is the only
libsection in it (it was ``from pytensor.link.c.op import ExternalCOp``)."""

import pytensor
from pytensor.graph.basic import Apply

from libsection.pytensor import ExternalCOp


class VectorMaximum(ExternalCOp):
    __props__ = ()

    func_file = "./vectorMaximum.c"
    func_name = "APPLY_SPECIFIC(vector_maximum)"

    def __init__(self):
        super().__init__(self.func_file, self.func_name)

    def make_node(self, x, y):
        x = pytensor.tensor.as_tensor_variable(x)
        y = pytensor.tensor.as_tensor_variable(y)
        # Validate the inputs' type
        if x.type.ndim != 1:
            raise TypeError("x must be a 1-d vector")
        if y.type.ndim != 1:
            raise TypeError("y must be a 1-d vector")

        # Create an output variable of the dtype both inputs upcast to
        output_var = pytensor.tensor.type.TensorType(
            dtype=pytensor.scalar.upcast(x.dtype, y.dtype), shape=(None,)
        )()

        return Apply(self, [x, y], [output_var])
