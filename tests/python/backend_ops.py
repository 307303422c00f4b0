"""Drop-in ops with gradients for the backend tests (Numba, JAX, PyMC's samplers) and
bench/bench_backends.py, and the Gate op with what a test does with it (threads that call it,
the gate they wait at). The C files are in data/backends/.
"""

from __future__ import annotations

import dis
import sys
import threading
import time

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_not_implemented
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

    def L_op(self, inputs, outputs, output_grads):
        # Its own gradient is not written, and says so (rather than being derived from its C
        # code): the op of the tests of a second derivative that does not exist.
        return [grad_not_implemented(self, i, x) for i, x in enumerate(inputs)]


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


class GaussLogLikeMeeting(GaussLogLike):
    """GaussLogLike whose first calls from two threads other than the test's must be inside the
    op at once (data/backends/gauss_loglike_meeting.c): `state` is the int64 array `[the test
    thread's native id, 0, 0]` it meets at, passed to the C code by its address."""

    __props__ = ("address",)

    def __init__(self, state: np.ndarray):
        self.state = state  # kept alive with the op
        self.address = int(state.ctypes.data)
        ExternalCOp.__init__(
            self, "data/backends/gauss_loglike_meeting.c", "APPLY_SPECIFIC(gauss_loglike_meeting)"
        )

    def make_node(self, y, mu):
        y = as_tensor_variable(y).astype("float64")
        mu = as_tensor_variable(mu).astype("float64")
        address = pt.constant(np.int64(self.address))
        return Apply(self, [y, mu, address], [pt.dscalar()])

    def c_headers(self, **kwargs):
        return ["<sys/syscall.h>", "<time.h>", "<unistd.h>"]

    def connection_pattern(self, node):
        return [[True], [True], [False]]

    def _gradient(self, inputs, outputs, cotangents):
        from pytensor.gradient import DisconnectedType

        y, mu, _ = inputs
        [g] = cotangents
        return [g * (mu - y), g * GaussLogLikeGrad()(y, mu), DisconnectedType()()]


setattr(GaussLogLikeMeeting, GRADIENT, GaussLogLikeMeeting._gradient)


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


class Gate(ExternalCOp):
    """Waits, with the GIL released, at a gate the test opens (an int64 array passed by its
    address: `[arrived, open, refuse new instances]`); returns `[id of the instance that ran,
    instances made, instances alive]` of its module (data/backends/gate.c)."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/backends/gate.c", "APPLY_SPECIFIC(gate)")

    def make_node(self, address):
        return Apply(self, [as_tensor_variable(address).astype("int64")], [pt.lvector()])

    def c_headers(self, **kwargs):
        return ["<time.h>"]

    def infer_shape(self, *args):
        return [(3,)]


# Seconds a test waits for the calls at a gate: a hang guard, which a working build never nears.
HANG_GUARD = 60.0


class GateState:
    """The int64 array the Gate op waits at: [calls arrived, open, refuse new instances]."""

    def __init__(self, *, opened: bool = False, refuse: bool = False):
        self.array = np.array([0, int(opened), int(refuse)], dtype=np.int64)
        self.address = np.array(self.array.ctypes.data, dtype=np.int64)  # the op's input

    @property
    def arrived(self) -> int:
        return int(self.array[0])

    def open(self) -> None:
        self.array[1] = 1

    def wait_until(self, condition, what: str) -> None:
        deadline = time.monotonic() + HANG_GUARD
        while not condition():
            if time.monotonic() > deadline:
                self.open()  # let the calls inside finish
                raise AssertionError(f"never {what} ({self.arrived} calls arrived)")
            time.sleep(0.002)


class Callers:
    """`n` threads, each making one call of `call` (a function of no arguments)."""

    def __init__(self, call, n: int):
        self.call = call
        self.results: list = [None] * n
        self.errors: list[BaseException] = []

        def work(k):
            try:
                self.results[k] = call()
            except Exception as e:  # reported by join
                self.errors.append(e)

        self.threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
        for t in self.threads:
            t.start()

    def all_inside(self) -> bool:
        """Whether every thread is inside its call of `call`'s callee (a CompiledOp, which has
        no Python frame): its innermost frame is `call`'s, at a CALL instruction. Read with the
        GIL held here, so such a thread is waiting for the op or running its C code, both with
        the GIL released."""
        frames = sys._current_frames()
        code = self.call.__code__
        calls = {i.offset for i in dis.get_instructions(code) if i.opname == "CALL"}
        for t in self.threads:
            frame = frames.get(t.ident)
            if frame is None or frame.f_code is not code or frame.f_lasti not in calls:
                return False
        return True

    def join(self) -> list:
        for t in self.threads:
            t.join(HANG_GUARD)
            assert not t.is_alive(), "a call never returned"
        assert not self.errors, self.errors
        return self.results


def calls_at_once(call, n: int) -> list:
    """The results of `n` threads calling `call(address of a gate)` once each, let go only when
    all `n` calls are inside the op at once (a failure if they never are)."""
    gate = GateState()
    callers = Callers(lambda: call(gate.address), n)
    gate.wait_until(lambda: gate.arrived == n, f"had {n} calls inside the op at once")
    gate.open()
    return callers.join()


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


class DoubleInPlace(ExternalCOp):
    """x *= 2, in place: the output is the input array (destroy_map {0: [0]})."""

    __props__ = ()
    destroy_map = {0: [0]}

    def __init__(self):
        super().__init__("data/backends/double_in_place.c", "APPLY_SPECIFIC(double_in_place)")

    def make_node(self, x):
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def infer_shape(self, *args):
        return [args[-1][0]]


class MixedDtypes(ExternalCOp):
    """(int32 counts, float32 weights, float64 scale) -> (int64 sum of the counts, float32
    weights * scale, bool weights > 0)."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/backends/mixed_dtypes.c", "APPLY_SPECIFIC(mixed_dtypes)")

    def make_node(self, counts, weights, scale):
        counts = as_tensor_variable(counts).astype("int32")
        weights = as_tensor_variable(weights).astype("float32")
        scale = as_tensor_variable(scale).astype("float64")
        outputs = [pt.lscalar(), pt.fvector(), pt.TensorType("bool", shape=(None,))()]
        return Apply(self, [counts, weights, scale], outputs)

    def infer_shape(self, *args):
        weights = args[-1][1]
        return [(), weights, weights]
