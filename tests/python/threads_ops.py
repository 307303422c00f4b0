"""Ops for the tests of an op's code run without the GIL (test_threads_nogil.py), written as
PyTensor users write them: no Py_BEGIN_ALLOW_THREADS, outputs allocated with NumPy in the op's
code (data/threads/). What the tests see is read inside the C code: calls that are inside at
once (a gate the test opens), the interval of each call, and whether Python ran in another
thread while the op's code ran (a ticker thread's count)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytensor.tensor as pt
from backend_ops import (
    GRADIENT,
    HANG_GUARD,
    Gate,
    GateState,
    GaussLogLike,
    GaussLogLikeGrad,
    GaussLogLikeMeeting,
    VecMul,
)
from pytensor.graph.basic import Apply
from pytensor.tensor import as_tensor_variable

import libsection
from libsection.pytensor import ExternalCOp

LOGGED_CALLS = 16  # data/threads/gate_classic.c logs the intervals of this many calls


class GateClassic(Gate):
    """backend_ops.Gate as users write it (data/threads/gate_classic.c): calls wait at a gate
    the test opens; `[id of the instance that ran, instances made, alive]`."""

    def __init__(self):
        ExternalCOp.__init__(self, "data/threads/gate_classic.c", "APPLY_SPECIFIC(gate)")


class GateLog(GateState):
    """GateState with room for the intervals gate_classic.c logs: `[arrived, open, refuse,
    calls, (start, end) per call]`, in ns of CLOCK_MONOTONIC, read inside the C code."""

    def __init__(self, *, opened: bool = False, refuse: bool = False):
        self.array = np.zeros(4 + 2 * LOGGED_CALLS, dtype=np.int64)
        self.array[1:3] = [int(opened), int(refuse)]
        self.address = np.array(self.array.ctypes.data, dtype=np.int64)

    def intervals(self) -> list[tuple[int, int]]:
        n = min(int(self.array[3]), LOGGED_CALLS)
        return [(int(self.array[4 + 2 * k]), int(self.array[5 + 2 * k])) for k in range(n)]


def overlapping(intervals: list[tuple[int, int]]) -> bool:
    """Whether some two of the intervals overlap."""
    ordered = sorted(intervals)
    return any(later[0] < earlier[1] for earlier, later in zip(ordered, ordered[1:], strict=False))


def gate_calls_at_once(call, n: int, gate: GateLog | None = None) -> tuple[list, GateLog]:
    """The results of `n` threads calling `call(address of a gate)` once each, let go only when
    all `n` calls are inside the op at once (a failure if they never are), and the gate."""
    from backend_ops import Callers

    gate = gate or GateLog()
    callers = Callers(lambda: call(gate.address), n)
    gate.wait_until(lambda: gate.arrived == n, f"had {n} calls inside the op at once")
    gate.open()
    return callers.join(), gate


class Ticker:
    """A thread running Python, counting in `array[0]`, while the `with` block runs: an op's
    code sees it count only while the thread running the op does not hold the GIL."""

    def __init__(self):
        self.array = np.zeros(9, dtype=np.int64)
        self.address = np.array(self.array.ctypes.data, dtype=np.int64)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._count, daemon=True)

    def _count(self):
        while not self._stop.is_set():
            self.array[0] += 1
            time.sleep(0.0005)

    def __enter__(self):
        self._thread.start()
        while self.array[0] == 0:  # counting before the op is called
            time.sleep(0.001)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(HANG_GUARD)


SEEN = np.array(HANG_GUARD * 1e9, dtype=np.int64)  # wait for a tick: a hang guard
NOT_SEEN = np.array(300_000_000, dtype=np.int64)  # 0.3 s: the ticker ticks every 0.5 ms


def jax_function(inputs, outputs):
    """The JAX function PyTensor's JAX mode makes of the graph (the op as an FFI call)."""
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    fgraph = FunctionGraph(inputs, outputs, clone=True)
    get_mode("JAX").optimizer(fgraph)
    fn = jax_funcify(fgraph)
    return lambda *a: fn(*a)[0]


def ticks_files(unclassified: bool = False) -> list[str]:
    first = "ticks_unclassified.c" if unclassified else "ticks_plain.c"
    return [f"data/threads/{first}", "data/threads/ticks.c", "data/threads/ticks_op.c"]


def build_ticks(unclassified: bool = False, **kwargs):
    """`build()`'s op of data/threads/ticks.c: (ticker address, ns to wait) -> 1 if Python ran
    in another thread meanwhile, else 0."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    return libsection.build(
        [str(here / f) for f in ticks_files(unclassified)],
        func_name="APPLY_SPECIFIC(ticks)",
        inputs=["int64[]", "int64[]"],
        outputs=["int64[]"],
        c_headers=["<time.h>"],
        **kwargs,
    )


class Ticks(ExternalCOp):
    """The drop-in of data/threads/ticks.c: (ticker address, ns to wait) -> whether Python ran
    in another thread while the op's code ran."""

    __props__ = ()
    unclassified = False

    def __init__(self):
        super().__init__(ticks_files(self.unclassified), "APPLY_SPECIFIC(ticks)")

    def make_node(self, address, wait_ns):
        inputs = [as_tensor_variable(v).astype("int64") for v in (address, wait_ns)]
        return Apply(self, inputs, [pt.lscalar()])

    def c_headers(self, **kwargs):
        return ["<time.h>"]

    def infer_shape(self, *args):
        return [()]


class Meet(libsection.ExternalCOp):
    """data/threads/meet.c: z = x * sum(x) (NumPy's PyArray_Sum), z[0] the number of calls of
    its instance (its struct), ValueError for x[0] < 0; calls wait at a gate (a GateLog)."""

    func_files = ["data/threads/meet.c"]
    func_name = "APPLY_SPECIFIC(meet)"

    def output_types(self, x, address):
        return ["float64[:]"]

    def c_headers(self):
        return ["<time.h>"]


class TicksBatched(libsection.ExternalCOp):
    """ticks_op.c over a batch of rows of one element each: (ticker address, ns to wait)."""

    func_files = ticks_files()
    func_name = "APPLY_SPECIFIC(ticks)"
    gufunc_signature = "(a),(a)->(a)"

    def output_types(self, address, wait_ns):
        return ["int64[:]"]

    def c_headers(self):
        return ["<time.h>"]


class TicksScale(libsection.ExternalCOp):
    """data/threads/ticks_scale.c: y = 2 * x[0], logging in the ticker's array whether Python ran
    in another thread during each call; its gradient is derived from its C code."""

    func_files = ["data/threads/ticks.c", "data/threads/ticks_scale.c"]
    func_name = "APPLY_SPECIFIC(ticks_scale)"

    def output_types(self, x, address):
        return ["float64[]"]

    def c_headers(self):
        return ["<time.h>"]


class VecMulKept(VecMul):
    """VecMul keeping the GIL while its code runs, as every op did before the linker released
    it (bench/bench_threads.py compares the two)."""

    release_gil = False


class GaussLogLikeGradAsWritten(GaussLogLikeGrad):
    """d/dmu of GaussLogLikeAsWritten, written alike (data/threads/)."""

    def __init__(self):
        ExternalCOp.__init__(
            self,
            "data/threads/gauss_loglike_grad_as_written.c",
            "APPLY_SPECIFIC(gauss_loglike_grad)",
        )


class GaussLogLikeAsWritten(GaussLogLike):
    """backend_ops.GaussLogLike as PyTensor users write it: one loop, the output allocated when
    there is none to reuse, no Py_BEGIN_ALLOW_THREADS (data/threads/gauss_loglike_as_written.c)."""

    def __init__(self):
        ExternalCOp.__init__(
            self, "data/threads/gauss_loglike_as_written.c", "APPLY_SPECIFIC(gauss_loglike)"
        )

    def _gradient(self, inputs, outputs, cotangents):
        y, mu = inputs
        [g] = cotangents
        return [g * (mu - y), g * GaussLogLikeGradAsWritten()(y, mu)]


class GaussLogLikeMeetingAsWritten(GaussLogLikeMeeting):
    """backend_ops.GaussLogLikeMeeting as users write it (no Py_BEGIN_ALLOW_THREADS), logging
    each call's interval (data/threads/gauss_loglike_meeting_as_written.c): `state` is
    `[the test thread's native id, 0, 0, 0, (start, end) * 16]`, passed by its address."""

    def __init__(self, state: np.ndarray):
        self.state = state  # kept alive with the op
        self.address = int(state.ctypes.data)
        ExternalCOp.__init__(
            self,
            "data/threads/gauss_loglike_meeting_as_written.c",
            "APPLY_SPECIFIC(gauss_loglike_meeting)",
        )

    def _gradient(self, inputs, outputs, cotangents):
        from pytensor.gradient import DisconnectedType

        y, mu, _ = inputs
        [g] = cotangents
        return [g * (mu - y), g * GaussLogLikeGradAsWritten()(y, mu), DisconnectedType()()]

    def intervals(self) -> list[tuple[int, int]]:
        n = min(int(self.state[3]), LOGGED_CALLS)
        return [(int(self.state[4 + 2 * k]), int(self.state[5 + 2 * k])) for k in range(n)]


for _cls in (GaussLogLikeAsWritten, GaussLogLikeMeetingAsWritten):
    setattr(_cls, GRADIENT, _cls._gradient)
