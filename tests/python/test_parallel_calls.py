"""Threads run an op at once when its C code releases the GIL (nutpie's chains call one
compiled Numba function from several threads): a thread that finds the node's instance busy
gets a spare instance of its own (up to a cap), owned by the node's instance and freed with it.
An instance on a PyTensor VM's cells gets none.

What happens is seen, never timed: the Gate op (data/backends/gate.c) waits inside its C code,
GIL released, until the test opens its gate, and counts the calls inside at once; each call
returns the id of the instance that ran it and how many instances of its module were made and
are alive. A deadline only guards against a hang, which is a failure."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from backend_ops import HANG_GUARD, Callers, Gate, GateState, VecMul, calls_at_once

MAX_SPARES = 64  # python/src/compiled_op.cpp: threads beyond this many wait for the op


def standalone_instance():
    """A fresh compiled instance of a Gate node (on cells of its own), and one call's result
    on it alone: (id, instances made, instances alive)."""
    from libsection._node import compile_node

    a = pt.lscalar("a")
    node = Gate()(a).owner
    compiled = compile_node(node)
    return compiled, compiled(GateState(opened=True).address)


def numba_function(inputs, outputs):
    """The Numba function PyTensor compiles for the graph, called directly, as nutpie calls a
    model's logp from its chains' threads (a PyTensor Function itself is not thread-safe)."""
    fn = pytensor.function(inputs, outputs, mode="NUMBA").vm.jit_fn
    return lambda *a: fn(*a)[0]


def test_numba_threads_run_a_gil_releasing_op_at_once(cache_dir):
    a = pt.lscalar("a")
    fn = numba_function([a], [Gate()(a)])
    fn(GateState(opened=True).address)  # compiled before the threads start
    ids = {int(r[0]) for r in calls_at_once(fn, 2)}
    assert len(ids) == 2, ids  # the second thread ran a spare


def test_the_standalone_object_gets_a_spare_per_busy_thread(cache_dir):
    compiled, (own_id, made, _) = standalone_instance()
    results = calls_at_once(compiled, 3)
    ids = {int(r[0]) for r in results}
    assert len(ids) == 3 and own_id in ids, (own_id, ids)
    assert max(int(r[1]) for r in results) == made + 2, "not one spare per busy thread"

    # Once every call is back, the node's own instance is free: no new spare is made.
    again = compiled(GateState(opened=True).address)
    assert (int(again[0]), int(again[1])) == (own_id, made + 2)


def test_spares_are_freed_with_their_node(cache_dir):
    compiled, (_, _, alive) = standalone_instance()
    assert {int(r[2]) for r in calls_at_once(compiled, 3)} == {alive + 2}  # two spares alive
    compiled = None  # the node's instance goes, and its spares with it
    gc.collect()
    # A new instance of the same module counts what is alive now: itself and what was alive
    # before the node's instance was made, no spare.
    _, (_, _, now) = standalone_instance()
    assert now == alive, f"{now - alive} spare(s) outlived their node"


def test_spares_stop_at_the_cap(cache_dir):
    compiled, (own_id, made, _) = standalone_instance()
    gate = GateState()
    n = MAX_SPARES + 4
    callers = Callers(lambda: compiled(gate.address), n)
    inside = MAX_SPARES + 1  # the node's own instance and its spares
    gate.wait_until(
        lambda: gate.arrived == inside and callers.all_inside(),
        f"had {inside} calls inside and the other {n - inside} waiting",
    )
    assert gate.arrived == inside, "spares beyond the cap"
    gate.open()
    results = callers.join()
    assert len({int(r[0]) for r in results}) == inside
    assert max(int(r[1]) for r in results) == made + MAX_SPARES


def test_a_spare_whose_init_code_fails_raises_its_error_and_is_not_kept(cache_dir):
    compiled, (own_id, made, alive) = standalone_instance()
    gate = GateState(refuse=True)
    holder = Callers(lambda: compiled(gate.address), 1)
    gate.wait_until(lambda: gate.arrived == 1, "had the first call inside")
    # The node's instance is busy: this thread's spare runs the init code, which fails.
    with pytest.raises(RuntimeError, match="gate: no new instance while refused"):
        compiled(GateState(opened=True).address)
    gate.open()
    (held,) = holder.join()
    assert (int(held[0]), int(held[1]), int(held[2])) == (own_id, made, alive)

    # Nothing half-made was kept: the next busy call makes a spare that works.
    results = calls_at_once(compiled, 2)
    assert len({int(r[0]) for r in results}) == 2
    assert {(int(r[1]), int(r[2])) for r in results} == {(made + 1, alive + 1)}


def test_an_instance_on_a_vms_cells_gets_no_spares(cache_dir):
    # CVM's thunks run the op in place on the VM's storage: one VM, one thread. A second call
    # that finds the instance busy waits for it rather than making a spare.
    a = pt.lscalar("a")
    f = pytensor.function([a], Gate()(a), mode="CVM")
    (thunk,) = [t for t in f.vm.thunks if hasattr(t, "compiled")]
    own_id, made, _ = (int(v) for v in f(GateState(opened=True).address))

    gate = GateState()
    first = Callers(lambda: thunk.compiled(gate.address), 1)
    gate.wait_until(lambda: gate.arrived == 1, "had the first call inside")
    second = Callers(lambda: thunk.compiled(gate.address), 1)
    gate.wait_until(second.all_inside, "had the second call waiting")
    assert gate.arrived == 1, "the second call ran beside the first"
    gate.open()
    for result in (*first.join(), *second.join()):
        assert (int(result[0]), int(result[1])) == (own_id, made), "a spare was made"


def test_an_op_that_keeps_the_gil_still_runs_one_call_at_a_time(cache_dir):
    # VecMul never releases the GIL: threads take turns, and every result is right.
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = numba_function([x, y], [VecMul()(x, y)])
    rng = np.random.default_rng(0)
    data = [(rng.normal(size=50), rng.normal(size=50)) for _ in range(8)]
    results: list = [None] * 8
    barrier = threading.Barrier(8)

    def work(k):
        a, b = data[k]
        barrier.wait()
        results[k] = [fn(a, b).copy() for _ in range(200)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_GUARD)
    for k in range(8):
        assert results[k] is not None, f"thread {k} failed"
        for r in results[k]:
            np.testing.assert_array_equal(r, data[k][0] * data[k][1])
