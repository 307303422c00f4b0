"""Threads run an op at once when its C code releases the GIL (nutpie's chains call one
compiled Numba function from several threads): a thread that finds the node's instance busy
gets a spare instance of its own, owned by the node's instance and freed with it.

Overlap is shown by the intervals the C code itself records (SpinTimes), never by timing."""

from __future__ import annotations

import threading

import numpy as np
import pytensor
import pytensor.tensor as pt
from backend_ops import SpinTimes, VecMul


def run_in_threads(call, n: int):
    results: list = [None] * n
    errors: list = []
    barrier = threading.Barrier(n)

    def work(k):
        barrier.wait()
        try:
            results[k] = call(k)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def overlapping(intervals) -> bool:
    return max(start for start, _ in intervals) < min(stop for _, stop in intervals)


def numba_function(inputs, outputs):
    """The Numba function PyTensor compiles for the graph, called directly, as nutpie calls a
    model's logp from its chains' threads (a PyTensor Function itself is not thread-safe)."""
    fn = pytensor.function(inputs, outputs, mode="NUMBA").vm.jit_fn
    return lambda *a: fn(*a)[0]


def test_numba_threads_run_a_gil_releasing_op_at_once(cache_dir):
    s = pt.dscalar("s")
    fn = numba_function([s], [SpinTimes()(s)])
    fn(np.array(0.0))  # compiled before the threads start
    times = run_in_threads(lambda k: fn(np.array(0.3)).copy(), 2)
    for start, stop in times:
        assert stop - start >= 0.3
    assert overlapping(times), f"the two calls ran one after the other: {times}"


def test_the_standalone_object_gets_a_spare_per_busy_thread(cache_dir):
    s = pt.dscalar("s")
    f = pytensor.function([s], SpinTimes()(s), mode="FAST_COMPILE")
    node = f.maker.fgraph.toposort()[0]
    from libsection._node import compile_node

    compiled = compile_node(node)
    times = run_in_threads(lambda k: compiled(np.array(0.2)).copy(), 3)
    assert overlapping(times), times
    # Each thread's result is its own array: no call overwrote another's output.
    assert len({id(t) for t in times}) == 3


def test_an_op_that_keeps_the_gil_still_runs_one_call_at_a_time(cache_dir):
    # VecMul never releases the GIL: threads take turns, and every result is right.
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = numba_function([x, y], [VecMul()(x, y)])
    rng = np.random.default_rng(0)
    data = [(rng.normal(size=50), rng.normal(size=50)) for _ in range(8)]

    def call(k):
        a, b = data[k]
        return [fn(a, b).copy() for _ in range(200)]

    for k, results in enumerate(run_in_threads(call, 8)):
        for r in results:
            np.testing.assert_array_equal(r, data[k][0] * data[k][1])


def test_an_instance_on_a_vms_cells_gets_no_spares(cache_dir):
    # CVM's thunks run the op in place on the VM's storage: one VM, one thread, no spares.
    s = pt.dscalar("s")
    f = pytensor.function([s], SpinTimes()(s), mode="CVM")
    start, stop = f(np.array(0.01))
    assert stop - start >= 0.01
