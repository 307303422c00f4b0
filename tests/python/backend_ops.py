"""Drop-in ops with gradients for the backend tests (Numba, JAX, PyMC's samplers) and
bench/bench_backends.py. The C files are in data/backends/.
"""

from __future__ import annotations

import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor import as_tensor_variable

from libsection.pytensor import ExternalCOp

# PyTensor 3.3 names the gradient `pullback` (and warns about `L_op`); 3.0 knows only `L_op`.
GRADIENT = "pullback" if hasattr(Op, "pullback") else "L_op"


class VecMul(ExternalCOp):
    """z = x * y for float64 vectors; its gradient is the op itself, again."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/backends/vec_mul.c", "APPLY_SPECIFIC(vec_mul)")

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        return Apply(self, [x, y], [pt.dvector()])

    def infer_shape(self, *args):  # (node, shapes) since PyTensor 3.3, (fgraph, ...) before
        return [args[-1][0]]

    def _gradient(self, inputs, outputs, cotangents):
        x, y = inputs
        [g] = cotangents
        return [self(g, y), self(g, x)]


class VecMulNoShape(ExternalCOp):
    """VecMul without infer_shape: JAX cannot know its output's shape."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/backends/vec_mul.c", "APPLY_SPECIFIC(vec_mul)")

    def make_node(self, x, y):
        return Apply(self, [as_tensor_variable(x), as_tensor_variable(y)], [pt.dvector()])


class VecMulWithPerform(VecMul):
    """VecMul with its own Python perform, which every mode but CVM must call."""

    performed = 0

    def perform(self, node, inputs, output_storage):
        type(self).performed += 1
        output_storage[0][0] = inputs[0] * inputs[1]


class GaussLogLikeGrad(ExternalCOp):
    """d/dmu of GaussLogLike: sum(y - mu)."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/backends/gauss_loglike_grad.c", "APPLY_SPECIFIC(gauss_loglike_grad)")

    def make_node(self, y, mu):
        y, mu = as_tensor_variable(y), as_tensor_variable(mu)
        return Apply(self, [y, mu], [pt.dscalar()])


class GaussLogLike(ExternalCOp):
    """-0.5 * sum((y - mu)^2): y a float64 vector, mu a float64 0-d tensor; the gradient with
    respect to mu is another C op (GaussLogLikeGrad), the one for y a PyTensor graph."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/backends/gauss_loglike.c", "APPLY_SPECIFIC(gauss_loglike)")

    def make_node(self, y, mu):
        y = as_tensor_variable(y).astype("float64")
        mu = as_tensor_variable(mu).astype("float64")
        return Apply(self, [y, mu], [pt.dscalar()])

    def _gradient(self, inputs, outputs, cotangents):
        y, mu = inputs
        [g] = cotangents
        return [g * (mu - y), g * GaussLogLikeGrad()(y, mu)]


class SmoothLogLikeGrad(ExternalCOp):
    """d/dalpha of SmoothLogLike, computed along the same recursion."""

    __props__ = ()

    def __init__(self):
        super().__init__(
            "data/backends/smooth_loglike_grad.c", "APPLY_SPECIFIC(smooth_loglike_grad)"
        )

    def make_node(self, y, alpha):
        y, alpha = as_tensor_variable(y), as_tensor_variable(alpha)
        return Apply(self, [y, alpha], [pt.dscalar()])


class SmoothLogLike(ExternalCOp):
    """A recursive filter's log-likelihood (exponential smoothing, see the C file): y a float64
    vector of data, alpha a float64 0-d tensor in (0, 1). Its built-in twin needs a scan
    (`smooth_loglike_scan`). The gradient for alpha is SmoothLogLikeGrad; y is data."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/backends/smooth_loglike.c", "APPLY_SPECIFIC(smooth_loglike)")

    def make_node(self, y, alpha):
        y = as_tensor_variable(y).astype("float64")
        alpha = as_tensor_variable(alpha).astype("float64")
        return Apply(self, [y, alpha], [pt.dscalar()])

    def _gradient(self, inputs, outputs, cotangents):
        from pytensor.gradient import grad_not_implemented

        y, alpha = inputs
        [g] = cotangents
        return [grad_not_implemented(self, 0, y), g * SmoothLogLikeGrad()(y, alpha)]


def smooth_loglike_scan(y, alpha):
    """SmoothLogLike written with PyTensor built-ins: the recursion as a scan."""
    import warnings

    import pytensor

    y = as_tensor_variable(y).astype("float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # scan's return signature, 3.x
        states, _ = pytensor.scan(
            lambda yt, s, a: a * yt + (1 - a) * s,
            sequences=[y[1:]],
            outputs_info=[y[0]],
            non_sequences=[alpha],
        )
    predictions = pt.concatenate([y[:1], states[:-1]])
    return -0.5 * ((y[1:] - predictions) ** 2).sum()


for _cls in (VecMul, GaussLogLike, SmoothLogLike):
    setattr(_cls, GRADIENT, _cls._gradient)


class VecMulWrongShape(VecMul):
    """VecMul whose infer_shape claims one element more than its C code makes (as a
    convolution gradient op that ignores dilation would): JAX must refuse the output."""

    def infer_shape(self, *args):
        return [(args[-1][0][0] + 1,)]


class GaussLogLikeNoDataGrad(GaussLogLike):
    """GaussLogLike as PyMC's black-box likelihood example writes it: no gradient for the data
    input (grad_not_implemented), only for mu."""

    def _gradient(self, inputs, outputs, cotangents):
        from pytensor.gradient import grad_not_implemented

        y, mu = inputs
        [g] = cotangents
        return [grad_not_implemented(self, 0, y), g * GaussLogLikeGrad()(y, mu)]


setattr(GaussLogLikeNoDataGrad, GRADIENT, GaussLogLikeNoDataGrad._gradient)


class SpinTimes(ExternalCOp):
    """Spins for its input's seconds with the GIL released; returns [start, stop]."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/backends/spin_times.c", "APPLY_SPECIFIC(spin_times)")

    def make_node(self, seconds):
        return Apply(self, [as_tensor_variable(seconds).astype("float64")], [pt.dvector()])

    def c_headers(self, **kwargs):
        return ["<time.h>"]

    def infer_shape(self, *args):
        return [(2,)]


class ScaleByParam(ExternalCOp):
    """z = k * x, where k is the op's params: a scalar type, get_params returning whatever the
    op was given (a Python number, a NumPy scalar of another width)."""

    __props__ = ("dtype", "k")

    def __init__(self, dtype, k):
        from pytensor.scalar import ScalarType

        self.dtype, self.k = dtype, k
        self.params_type = ScalarType(dtype)
        super().__init__("data/backends/scale_by_param.c", "APPLY_SPECIFIC(scale_by_param)")

    def get_params(self, node):
        return self.k

    def make_node(self, x):
        return Apply(self, [as_tensor_variable(x)], [pt.dvector()])

    def infer_shape(self, *args):
        return [args[-1][0]]
