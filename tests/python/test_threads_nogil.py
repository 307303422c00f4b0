"""An op's code runs without the GIL as its author wrote it (no Py_BEGIN_ALLOW_THREADS): the
linker releases the GIL around the op's code and takes it back around each call of Python's
or NumPy's API, so threads (nutpie's chains, plain Python threads, XLA's) run the op at once.

What happens is seen from inside the C code, never timed: calls of two threads inside the op
at once (a gate the test opens, data/threads/gate_classic.c) with the interval of each call,
and whether Python ran in another thread while the op's code ran (a ticker thread's count,
data/threads/ticks.c). A deadline only guards against a hang, which is a failure."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from backend_ops import Callers
from threads_ops import (
    NOT_SEEN,
    SEEN,
    GateClassic,
    GateLog,
    GaussLogLikeMeetingAsWritten,
    Meet,
    Ticker,
    Ticks,
    TicksBatched,
    TicksScale,
    build_ticks,
    gate_calls_at_once,
    overlapping,
)

import libsection

MODES = ["CVM", "FAST_COMPILE", "NUMBA", "JAX"]


def seen_while(call) -> int:
    with Ticker() as ticker:
        return int(np.asarray(call(ticker.address)))


# ---- the standalone op --------------------------------------------------------------------


def test_the_op_runs_without_the_gil_by_default(cache_dir):
    op = build_ticks()
    assert seen_while(lambda address: op(address, SEEN)) == 1


def test_threads_run_an_op_as_written_at_once(cache_dir):
    from pathlib import Path

    here = Path(__file__).resolve().parent
    op = libsection.build(
        [str(here / "data/threads/gate_classic.c")],
        func_name="APPLY_SPECIFIC(gate)",
        inputs=["int64[]"],
        outputs=["int64[:]"],
        c_headers=["<time.h>"],
    )
    results, gate = gate_calls_at_once(lambda address: op(address), 2)
    assert len({int(r[0]) for r in results}) == 2  # the second thread ran a spare
    intervals = gate.intervals()
    assert len(intervals) == 2 and overlapping(intervals), intervals


# ---- every mode ----------------------------------------------------------------------------


def mode_function(mode: str):
    """A function of one GateClassic node in `mode`, callable from threads (a PyTensor Function
    is not thread-safe: NUMBA's and JAX's compiled function is called directly, as nutpie and
    numpyro call them; CVM and FAST_COMPILE get one function per thread)."""
    a = pt.lscalar("a")
    if mode == "NUMBA":
        fn = pytensor.function([a], [GateClassic()(a)], mode="NUMBA").vm.jit_fn
        return lambda address: fn(address)[0]
    if mode == "JAX":
        jax = pytest.importorskip("jax")
        from threads_ops import jax_function

        return jax.jit(jax_function([a], [GateClassic()(a)]))
    import threading

    mine = threading.local()

    def call(address):
        if not hasattr(mine, "fn"):
            mine.fn = pytensor.function([a], GateClassic()(a), mode=mode)
        return mine.fn(address)

    return call


@pytest.mark.parametrize("mode", MODES)
def test_threads_run_an_op_as_written_at_once_in_every_mode(mode, cache_dir):
    call = mode_function(mode)
    call(GateLog(opened=True).address)  # compiled before the threads start
    if mode in ("CVM", "FAST_COMPILE"):  # one function per thread: compile the second too
        Callers(lambda: call(GateLog(opened=True).address), 1).join()
    results, gate = gate_calls_at_once(call, 2)
    assert all(np.asarray(r).shape == (3,) for r in results)
    intervals = gate.intervals()
    assert len(intervals) == 2 and overlapping(intervals), intervals


# ---- what the op's code does while the GIL is released ------------------------------------


def test_ops_that_allocate_raise_keep_state_and_call_numpy_run_at_once(cache_dir):
    import threading

    op = Meet()
    good, bad = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 2.0])
    op(good, GateLog(opened=True).address)  # built before the threads start; its first call
    gate, inputs, taking = GateLog(), iter([good, bad]), threading.Lock()

    def call():
        with taking:
            x = next(inputs)
        return op(x, gate.address)

    callers = Callers(call, 2)
    gate.wait_until(lambda: gate.arrived == 2, "had 2 calls inside the op at once")
    gate.open()
    with pytest.raises(AssertionError):
        callers.join()
    # The error kept its class, raised from code that ran without the GIL.
    [error] = callers.errors
    assert type(error) is ValueError and "x[0] is negative" in str(error), repr(error)
    # z = x * sum(x), z[0] the calls of its instance: the op's own (its second call) or a
    # spare (its first).
    [result] = [r for r in callers.results if r is not None]
    np.testing.assert_array_equal(result[1:], [12.0, 18.0])
    assert result[0] in (1.0, 2.0), result
    # Each instance kept its state: called again, the two count on from where they were.
    gate = GateLog()
    again, _ = gate_calls_at_once(lambda address: op(good, address), 2, gate)
    assert sorted(int(r[0]) for r in again) == [2, 3], again
    assert overlapping(gate.intervals()), gate.intervals()


def test_an_op_declared_c_runs_without_the_gil(cache_dir):
    op = build_ticks(language="c")
    assert seen_while(lambda address: op(address, SEEN)) == 1


def test_a_batch_of_long_rows_gives_the_gil_up_on_each(cache_dir):
    op = TicksBatched()
    with Ticker() as ticker:
        seen = op(np.full((3, 1), ticker.address), np.full((3, 1), SEEN))
    np.testing.assert_array_equal(seen, [[1], [1], [1]])


def test_a_derived_gradient_runs_without_the_gil(cache_dir):
    from libsection.pytensor import pytensor_op

    x, address = pt.dvector("x"), pt.lvector("address")
    y = pytensor_op(TicksScale())(x, address)
    grad = pytensor.function([x, address], pt.grad(y, x), mode="FAST_COMPILE")
    assert "DerivedGradient" in [type(n.op).__name__ for n in grad.maker.fgraph.apply_nodes]
    with Ticker() as ticker:
        np.testing.assert_array_equal(grad([1.5], [ticker.address]), [2.0])
    # The op's own call (its value, which the derivative checks its pass against), then the
    # derivative's pass over the op's code on dual numbers: each saw the ticker.
    assert list(ticker.array[1:3]) == [1, 1] and ticker.array[8] == 2, ticker.array


def test_a_derived_gradient_without_the_gil_warns_with_it(cache_dir, monkeypatch):
    # A tape of one entry: reverse mode falls back on forward passes, and says so from code that
    # gave the GIL up, taking it back for the warning (and for the error `-W error` makes of it).
    import warnings

    from libsection.pytensor import pytensor_op

    monkeypatch.delenv("LIBSECTION_DERIVATIVE_MODE", raising=False)
    monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "32")
    x, address = pt.dvector("x"), pt.lvector("address")
    grad = pytensor.function(
        [x, address], pt.grad(pytensor_op(TicksScale())(x, address), x), mode="FAST_COMPILE"
    )
    xv = np.full(20, 1.5)  # 20 scalars: reverse mode in auto, then 3 forward passes
    with Ticker() as ticker, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(grad(xv, [ticker.address]), [2.0] + [0.0] * 19)
    (said,) = [str(w.message) for w in caught]
    assert said.startswith("TicksScale.pullback (") and "LIBSECTION_TAPE_MAX_BYTES=32 " in said
    assert list(ticker.array[1:6]) == [1] * 5, ticker.array  # the op, the taped pass, 3 passes
    other = pytensor.function(
        [x, address], pt.grad(pytensor_op(TicksScale())(x, address), x), mode="FAST_COMPILE"
    )
    with Ticker() as ticker, warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="runs forward passes"):
            other(xv, [ticker.address])


# ---- nutpie -------------------------------------------------------------------------------


def test_nutpie_chains_run_an_op_as_written_at_once(cache_dir):
    # nutpie's chains call one compiled Numba function from threads of their own; the op holds
    # no Py_BEGIN_ALLOW_THREADS, so their first calls meet inside it only if the linker released
    # the GIL. The intervals are the chains' calls, logged inside the C code.
    pm = pytest.importorskip("pymc")
    pytest.importorskip("nutpie")
    import threading
    import warnings

    from test_pymc_backends import Y, check_posterior

    state = np.zeros(4 + 2 * 16, dtype=np.int64)
    state[0] = threading.get_native_id()
    op = GaussLogLikeMeetingAsWritten(state)
    with pm.Model():
        mu = pm.Normal("mu", 0, 10)
        pm.Potential("likelihood", op(Y, mu))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyMC's notes on Potential
            idata = pm.sample(
                draws=1000,
                tune=500,
                chains=2,
                cores=2,
                nuts_sampler="nutpie",
                random_seed=7,
                progressbar=False,
                compute_convergence_checks=False,
            )
    assert idata.sample_stats.attrs["inference_library"] == "nutpie"
    assert state[1] >= 2 and state[2] == 1, state[:4]  # two chains' threads met inside the op
    assert overlapping(op.intervals()), op.intervals()
    check_posterior(idata, "nutpie")


# ---- what keeps the GIL -------------------------------------------------------------------


def test_a_call_the_linker_cannot_classify_keeps_the_gil_and_says_where(cache_dir, caplog):
    with caplog.at_level(logging.DEBUG, logger="libsection"):
        op = build_ticks(unclassified=True)
    assert seen_while(lambda address: op(address, NOT_SEEN)) == 0
    said = [r.getMessage() for r in caplog.records if "keeps the GIL" in r.getMessage()]
    assert len(said) == 1, said
    assert re.search(
        r"keeps the GIL while its code runs: .*data/threads/ticks_unclassified\.c:6: "
        r"calls `ticks_through`, which its code does not define",
        said[0],
    ), said[0]
    # It still works from threads: each call held the GIL, so none saw the ticker.
    results = Callers(lambda: seen_while(lambda address: op(address, NOT_SEEN)), 2).join()
    assert results == [0, 0]


def test_an_op_says_no_with_release_gil_false(cache_dir, caplog):
    with caplog.at_level(logging.DEBUG, logger="libsection"):
        op = build_ticks(release_gil=False)
    assert seen_while(lambda address: op(address, NOT_SEEN)) == 0
    assert not [r for r in caplog.records if "keeps the GIL" in r.getMessage()]


def test_the_setting_turns_it_off_for_every_op(cache_dir, monkeypatch):
    monkeypatch.setenv("LIBSECTION_RELEASE_GIL", "0")
    op = build_ticks()
    assert seen_while(lambda address: op(address, NOT_SEEN)) == 0


@pytest.mark.parametrize("mode", MODES)
def test_the_drop_in_says_no_with_its_class_attribute(mode, cache_dir):
    if mode == "JAX":
        pytest.importorskip("jax")

    class Keeps(Ticks):
        release_gil = False

    address, wait = pt.lscalar("address"), pt.lscalar("wait")
    released = pytensor.function([address, wait], Ticks()(address, wait), mode=mode)
    kept = pytensor.function([address, wait], Keeps()(address, wait), mode=mode)
    assert seen_while(lambda a: released(a, SEEN)) == 1
    assert seen_while(lambda a: kept(a, NOT_SEEN)) == 0
