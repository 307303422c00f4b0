"""Ops whose gradients libsection derives from their C code, each beside the same op with a
hand-written gradient (in C, or in PyTensor terms), for tests/python/test_gradient*.py and
bench/bench_gradient.py. Their func_files resolve against this directory."""

from __future__ import annotations

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.tensor.type import TensorType

import libsection
from libsection.pytensor import ExternalCOp, pytensor_op

# ---------------------------------------------------------------- an ODE log-likelihood


class Logistic(libsection.ExternalCOp):
    """The log-likelihood of logistic growth (r, K, y0) = theta, by Euler steps: no gradient of
    its own, so libsection derives it."""

    func_files = ["logistic.c"]
    func_name = "APPLY_SPECIFIC(logistic_loglik)"
    params = {"dt": "float64", "sigma": "float64"}

    def __init__(self, dt: float = 0.05, sigma: float = 0.5) -> None:
        super().__init__()
        self.dt, self.sigma = float(dt), float(sigma)

    def output_types(self, theta, obs):
        return ["float64[]"]

    def infer_shape(self, fgraph, node, shapes):
        return [()]


class LogisticGrad(Logistic):
    """The hand-written gradient of ``Logistic`` in theta (forward sensitivities), in C."""

    func_files = ["logistic_grad.c"]
    func_name = "APPLY_SPECIFIC(logistic_loglik_grad)"

    def output_types(self, theta, obs):
        return ["float64[:]"]

    def infer_shape(self, fgraph, node, shapes):
        return [shapes[0]]


class LogisticHand(Logistic):
    """``Logistic`` with its hand-written gradient."""

    def pullback(self, inputs, outputs, cotangents):
        theta, obs = inputs
        (g,) = cotangents
        grad = pytensor_op(LogisticGrad(self.dt, self.sigma))(theta, obs)
        return [g * grad, grad_undefined(self, 1, obs, "the data")]


def logistic_data(n: int = 200, dt: float = 0.05, sigma: float = 0.5, seed: int = 38):
    """Observations of logistic growth from (r, K, y0) = (0.8, 10, 0.5), one per Euler step."""
    r, k, y = 0.8, 10.0, 0.5
    path = []
    for _ in range(n):
        y = y + dt * r * y * (1 - y / k)
        path.append(y)
    return np.asarray(path) + np.random.default_rng(seed).normal(0, sigma, n)


def logistic_loglik_numpy(theta, obs, dt=0.05, sigma=0.5) -> float:
    r, k, y = theta
    ll = 0.0
    for o in obs:
        y = y + dt * r * y * (1 - y / k)
        ll -= 0.5 * ((o - y) / sigma) ** 2
    return ll - len(obs) * (np.log(sigma) + 0.5 * np.log(2 * np.pi))


# ---------------------------------------------------------------- a reduction


class WeightedLogSumExp(ExternalCOp):
    """log(sum(w * exp(x))) of two float vectors (a drop-in op, no gradient of its own)."""

    __props__ = ()

    def __init__(self):
        super().__init__("logsumexp.c", "APPLY_SPECIFIC(weighted_logsumexp)")

    def make_node(self, x, w):
        x, w = pt.as_tensor_variable(x), pt.as_tensor_variable(w)
        return Apply(self, [x, w], [TensorType(x.type.dtype, shape=())()])


class WeightedLogSumExpHand(WeightedLogSumExp):
    def pullback(self, inputs, outputs, cotangents):
        (x, w), (out,), (g,) = inputs, outputs, cotangents
        e = pt.exp(x - out)
        return [g * w * e, g * e]


# ---------------------------------------------------------------- an integer input


class PowerSum(libsection.ExternalCOp):
    """c * sum(|x|**n) + sum(x**2) with an integer n (bridged into PyTensor by pytensor_op)."""

    func_files = ["powsum.c"]
    func_name = "APPLY_SPECIFIC(power_sum)"

    def output_types(self, x, n, c):
        return ["float64[]"]

    def infer_shape(self, fgraph, node, shapes):
        return [()]


class PowerSumHand(PowerSum):
    def pullback(self, inputs, outputs, cotangents):
        x, n, c = inputs  # n and c are numbers (ScalarType): pytensor_op bridges 0-d tensors so
        (g,) = cotangents
        nt, ct = pt.tensor_from_scalar(n), pt.tensor_from_scalar(c)
        ax = pt.abs(x)
        dx = ct * nt * pt.sign(x) * ax ** (nt - 1) + 2 * x
        return [
            g * dx,
            grad_undefined(self, 1, n, "an integer"),
            pt.scalar_from_tensor(pt.sum(g * ax**nt)),
        ]


# ---------------------------------------------------------------- support and struct code


def _number(a):
    """``a`` as a PyTensor scalar (a number, not a 0-d tensor): C code gets its value."""
    if isinstance(getattr(a, "type", None), ps.ScalarType):
        return a
    return pt.scalar_from_tensor(pt.as_tensor_variable(a))


class Ema(ExternalCOp):
    """The exponential moving average of a vector with rate a (a number): support code, a
    helper of DTYPE values, and a buffer in the op's struct."""

    __props__ = ()

    def __init__(self):
        super().__init__("ema.c", "APPLY_SPECIFIC(ema)")

    def make_node(self, x, a):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x, _number(a)], [x.type()])

    def infer_shape(self, *args):  # (fgraph, node, shapes) before PyTensor 3.3, then (node, shapes)
        return [args[-1][0]]


class Counted(ExternalCOp):
    """``(a * x, calls)``: the calls its struct has seen, to tell a struct kept between calls
    from one made afresh for each."""

    __props__ = ()

    def __init__(self):
        super().__init__("counted.c", "APPLY_SPECIFIC(counted)")

    def make_node(self, x, a):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x, _number(a)], [x.type(), pt.lscalar()])

    def infer_shape(self, *args):
        return [args[-1][0], ()]


class EmaHand(Ema):
    def pullback(self, inputs, outputs, cotangents):
        (x, a), (g,) = inputs, cotangents
        at = pt.tensor_from_scalar(a)
        n = x.shape[0]
        i = pt.arange(n)[:, None]
        j = pt.arange(n)[None, :]
        lag = pt.maximum(i - j, 0)
        below = pt.ge(i, j)
        weight = pt.switch(pt.eq(j, 0), 1.0, 1 - at)
        powers = pt.switch(below, at**lag, 0.0)
        m = powers * weight  # s = m @ x
        dpowers = pt.switch(below & pt.gt(lag, 0), lag * at ** pt.maximum(lag - 1, 0), 0.0)
        dweight = pt.switch(pt.eq(j, 0), 0.0, -1.0)
        dm = dpowers * weight + powers * dweight
        return [m.T @ g, pt.scalar_from_tensor(g @ (dm @ x))]


# ---------------------------------------------------------------- a code section, two outputs


class SoftClip(ExternalCOp):
    """(y, mean) of softplus(x)/2 + x**2/4 up to the first |x_i| over a limit (a number)."""

    __props__ = ()

    def __init__(self):
        super().__init__("softclip.c")

    def make_node(self, x, limit):
        x = pt.as_tensor_variable(x)
        if not isinstance(getattr(limit, "type", None), ps.ScalarType):
            limit = pt.scalar_from_tensor(pt.as_tensor_variable(limit))
        return Apply(self, [x, limit], [x.type(), ps.float64()])

    def infer_shape(self, *args):
        return [args[-1][0], ()]


def softclip_graph(x, limit):
    """SoftClip in PyTensor's own terms: what its hand-written gradient differentiates."""
    inside = pt.cumprod(pt.le(pt.abs(x), limit), axis=0)
    y = inside * (pt.softplus(x) / 2 + x**2 / 4)
    counted = pt.maximum(pt.sum(inside), 1)
    return y, limit * pt.sum(y) / counted


# ---------------------------------------------------------------- what is refused, and why


class _ScalarOfTwo(ExternalCOp):
    __props__ = ()
    file = ""

    def __init__(self):
        super().__init__(self.file, "APPLY_SPECIFIC(dot_grid)")

    def make_node(self, x, t):
        x, t = pt.as_tensor_variable(x), pt.as_tensor_variable(t)
        return Apply(self, [x, t], [TensorType("float64", shape=())()])


class HiddenCast(_ScalarOfTwo):
    """sum(x * t), reading x through `(double*)PyArray_DATA(x)`."""

    file = "hidden_cast.c"


class GridDot(_ScalarOfTwo):
    """sum(x * t), x through its DTYPE macro, the grid t through `(double*)`."""

    file = "grid_dot.c"


class _SumSquares(ExternalCOp):
    __props__ = ()
    file = ""

    def __init__(self):
        super().__init__(self.file, "APPLY_SPECIFIC(sum_squares)")

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [TensorType(x.type.dtype, shape=())()])


class HeldInDouble(_SumSquares):
    file = "held_in_double.c"


class HeldElement(_SumSquares):
    file = "held_element.c"


class CSumSquares(_SumSquares):
    """Declared C, with C's implicit `void*` conversion."""

    file = "c_sum_squares.c"
    language = "c"


class PythonCode(ExternalCOp):
    """An op whose c_code is Python's: libsection cannot recompile it on dual numbers."""

    __props__ = ()

    def __init__(self):
        super().__init__("logsumexp.c", "APPLY_SPECIFIC(weighted_logsumexp)")

    def make_node(self, x, w):
        x, w = pt.as_tensor_variable(x), pt.as_tensor_variable(w)
        return Apply(self, [x, w], [TensorType("float64", shape=())()])

    def c_code(self, node, name, inputs, outputs, sub):
        return super().c_code(node, name, inputs, outputs, sub)


class WeightedLogSumExpC(WeightedLogSumExp):
    """The same file declared C: its own module is C, its gradient's C++."""

    language = "c"


class MemcpySquare(ExternalCOp):
    """x * x after a memcpy of n * sizeof(double): its values on dual numbers are wrong."""

    __props__ = ()

    def __init__(self):
        super().__init__("memcpy_square.c", "APPLY_SPECIFIC(square)")

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])


class MemcpyTotal(ExternalCOp):
    """The sum of x's squares (a number) from a memcpy of n * sizeof(double): its values on
    dual numbers are wrong."""

    __props__ = ()

    def __init__(self):
        super().__init__("memcpy_total.c")

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [ps.float64()])


def forward_product(out, x, v):
    """PyTensor's forward-mode product of ``out`` for the tangent ``v`` of ``x``:
    ``pushforward`` since 3.3 (``Rop`` is deprecated there)."""
    import pytensor.gradient

    if hasattr(pytensor.gradient, "pushforward"):
        return pytensor.gradient.pushforward(out, x, v)
    return pytensor.gradient.Rop(out, x, v)


# ---------------------------------------------------------------- the derived gradient's edges


class _VectorOp(ExternalCOp):
    """A drop-in op of one float vector whose output is ``output`` (``"vector"`` or
    ``"scalar"``), from ``file`` and ``function``."""

    __props__ = ()
    file = ""
    function = ""
    output = "scalar"

    def __init__(self):
        super().__init__(self.file, f"APPLY_SPECIFIC({self.function})")

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        out = x.type() if self.output == "vector" else TensorType(x.type.dtype, shape=())()
        return Apply(self, [x], [out])


class FixedOutput(_VectorOp):
    """3 x - 1 into an output made with a fixed NPY_DOUBLE."""

    file, function, output = "fixed_output.c", "affine", "vector"


class Memo(_VectorOp):
    """sum_i x_i**2 exp(x_(i-1)) with a memo of its last input and result in its struct."""

    file, function = "memo.c", "memo_sum"


def memo_gradient(x):
    """The gradient of ``Memo`` at ``x``, by hand."""
    previous = np.concatenate([[0.0], x[:-1]])
    following = np.concatenate([x[1:], [0.0]])
    return 2 * x * np.exp(previous) + np.append(following[:-1] ** 2 * np.exp(x[:-1]), 0.0)


class StaticMemo(_VectorOp):
    """sum_i x_i**2 with a memo of its last input and result in static variables."""

    file, function = "static_memo.c", "memo_squares"


class KeptInput(_VectorOp):
    """sum(x) plus the sum of the previous call's input, whose array it keeps in a static."""

    file, function = "kept_input.c", "with_previous"


class FixedInput(ExternalCOp):
    """sum(x * w), both converted with a fixed NPY_DOUBLE."""

    __props__ = ()

    def __init__(self):
        super().__init__("fixed_input.c", "APPLY_SPECIFIC(dot)")

    def make_node(self, x, w):
        x, w = pt.as_tensor_variable(x), pt.as_tensor_variable(w)
        return Apply(self, [x, w], [TensorType("float64", shape=())()])


class Slopes(ExternalCOp):
    """f(x) elementwise for the function numbered ``which`` (sqrt, pow(x, .5), cbrt, asin,
    atan2(x, x)), given to its code as a constant integer input."""

    __props__ = ("which",)

    def __init__(self, which: int):
        self.which = int(which)
        super().__init__("slopes.c", "APPLY_SPECIFIC(slopes)")

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x, pt.constant(self.which, dtype="int64")], [x.type()])


SLOPES = {
    0: pt.sqrt,
    1: lambda x: x**0.5,
    2: lambda x: pt.sign(x) * abs(x) ** (1 / 3),
    3: pt.arcsin,
}
"""PyTensor's own graph of each of Slopes' functions but atan2 (whose gradient at (0, 0) is
undefined), for its gradient."""


# ---------------------------------------------------------------- batched ops


class Eccentric(ExternalCOp):
    """The eccentric anomaly E (E - e sin E = M) of 0-d M and e, by Newton steps: an elementwise
    solver written for one point, batched by ``pt.vectorize``."""

    __props__ = ()

    def __init__(self):
        super().__init__("eccentric.c", "APPLY_SPECIFIC(eccentric)")

    def make_node(self, m, e):
        m, e = pt.as_tensor_variable(m), pt.as_tensor_variable(e)
        return Apply(self, [m, e], [TensorType("float64", shape=())()])


def eccentric_numpy(m, e):
    """E, dE/dM and dE/de (the implicit function theorem at the solution)."""
    E = np.array(m, dtype=float) + 0.85 * e
    for _ in range(50):
        E = E - (E - e * np.sin(E) - m) / (1 - e * np.cos(E))
    d = 1 - e * np.cos(E)
    return E, 1 / d, np.sin(E) / d
