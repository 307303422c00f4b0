"""JAX runs drop-in ops as XLA FFI calls: no Python frame per call, the batch loop of vmap in
C, the op's own exceptions, outputs checked against the shapes JAX allocated, inputs the op
destroys copied for it, several outputs of several dtypes, concurrent calls on spares, and
gradients for ops that leave an input's gradient undefined.

Which path runs is read from the executable XLA compiled (its custom calls), not assumed.

Python frames are watched with sys.monitoring, which sees every thread (XLA calls the handler
on threads of its own, where sys.setprofile would see nothing)."""

from __future__ import annotations

import logging
import os
import re
import sys

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

jax = pytest.importorskip("jax")  # the py312 stack pins it
from backend_ops import (
    DoubleInPlace,
    Gate,
    GateState,
    GaussLogLikeNoDataGrad,
    MixedDtypes,
    VecMul,
    VecMulWrongShape,
    calls_at_once,
)

from libsection import _jax, _jax_ffi

needs_monitoring = pytest.mark.skipif(
    not hasattr(sys, "monitoring"), reason="sys.monitoring is new in Python 3.12"
)


def custom_calls(jitted, *args) -> list[str]:
    """The custom-call targets of the executable XLA compiles for `jitted` on `args`: what runs,
    the FFI target `libsection_node` or JAX's Python callback."""
    text = jitted.lower(*args).compile().as_text()
    return re.findall(r'custom_call_target="([^"]+)"', text)


def jax_function(inputs, outputs):
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    fgraph = FunctionGraph(inputs, outputs, clone=True)
    get_mode("JAX").optimizer(fgraph)
    fn = jax_funcify(fgraph)
    return lambda *a: fn(*a)[0] if len(outputs) == 1 else fn(*a)


class PythonFrames:
    """Counts the Python functions that start, in any thread, whose file is libsection's or
    JAX's host-callback machinery."""

    WATCHED = ("libsection", "jax/_src/callback.py")

    def __init__(self):
        self.seen: list[str] = []

    def __enter__(self):
        monitoring = sys.monitoring
        self.tool = monitoring.PROFILER_ID
        monitoring.use_tool_id(self.tool, "libsection test")

        def started(code, offset):
            if any(w in code.co_filename for w in self.WATCHED):
                self.seen.append(f"{code.co_filename}:{code.co_name}")

        monitoring.register_callback(self.tool, monitoring.events.PY_START, started)
        monitoring.set_events(self.tool, monitoring.events.PY_START)
        return self

    def __exit__(self, *exc):
        sys.monitoring.set_events(self.tool, 0)
        sys.monitoring.register_callback(self.tool, sys.monitoring.events.PY_START, None)
        sys.monitoring.free_tool_id(self.tool)


@pytest.fixture
def callback_only(monkeypatch):
    """The pure_callback path, as with a jaxlib whose FFI handler cannot be built."""
    monkeypatch.setattr(_jax_ffi, "target_ready", lambda: False)


@needs_monitoring
@pytest.mark.parametrize("path", ["ffi", "callback"])
def test_a_jitted_call_runs_no_python_frame(path, request, cache_dir):
    if path == "callback":
        request.getfixturevalue("callback_only")
    x, y = pt.dvector("x"), pt.dvector("y")
    f = jax.jit(jax_function([x, y], [VecMul()(x, y)]))
    a, b = np.arange(3.0), np.arange(3.0) + 1
    np.testing.assert_array_equal(f(a, b), a * b)  # traced and compiled here
    with PythonFrames() as frames:
        for _ in range(5):
            out = f(a, b).block_until_ready()
    np.testing.assert_array_equal(out, a * b)
    if path == "ffi":
        assert frames.seen == []
    else:  # the watch sees the callback's frames: it would see the FFI path's too
        assert any("libsection" in s for s in frames.seen)


def test_the_ffi_path_is_what_runs(cache_dir, monkeypatch):
    x, y = pt.dvector("x"), pt.dvector("y")
    a, b = np.ones(2), np.full(2, 2.0)
    f = jax.jit(jax_function([x, y], [VecMul()(x, y)]))
    assert custom_calls(f, a, b) == [_jax_ffi.TARGET]
    np.testing.assert_array_equal(f(a, b), np.full(2, 2.0))
    # PyTensor's JAX mode compiles the same call.
    g = pytensor.function([x, y], VecMul()(x, y), mode="JAX")
    assert custom_calls(g.vm.jit_fn, a, b) == [_jax_ffi.TARGET]
    np.testing.assert_array_equal(g(a, b), np.full(2, 2.0))
    # What the check would see of the fallback: JAX's Python callback, no FFI call.
    monkeypatch.setattr(_jax_ffi, "target_ready", lambda: False)
    fallback = jax.jit(jax_function([x, y], [VecMul()(x, y)]))
    (target,) = custom_calls(fallback, a, b)
    assert "callback" in target, target


def test_vmap_loops_in_c_and_matches_numpy(cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = jax_function([x, y], [VecMul()(x, y)])
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(1000, 3)), rng.normal(size=3)
    out = jax.jit(jax.vmap(fn, in_axes=(0, None)))(a, b)
    np.testing.assert_array_equal(np.asarray(out), a * b)
    both = jax.jit(jax.vmap(fn))(a, a[::-1].copy())
    np.testing.assert_array_equal(np.asarray(both), a * a[::-1])
    empty = jax.vmap(fn, in_axes=(0, None))(np.empty((0, 3)), b)
    assert np.asarray(empty).shape == (0, 3)


def test_a_c_error_keeps_its_class_in_jax_mode(cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    f = pytensor.function([x, y], VecMul()(x, y), mode="JAX")
    with pytest.raises(ValueError, match=r"vec_mul: lengths differ \(3 and 4\)") as caught:
        f(np.ones(3), np.ones(4))
    assert any("VecMul" in note for note in getattr(caught.value, "__notes__", []))
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 3.0)), np.full(2, 3.0))  # still runs


def test_a_bare_jitted_function_names_the_class_and_the_op(cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    f = jax.jit(jax_function([x, y], [VecMul()(x, y)]))
    with pytest.raises(Exception, match=r"ValueError in VecMul: vec_mul: lengths differ") as e:
        f(np.ones(3), np.ones(4)).block_until_ready()
    assert isinstance(_jax_ffi.original_error(e.value), ValueError)


# A file name the file system gave as bytes that are not UTF-8, as os.fsdecode leaves it (with a
# lone surrogate): text XLA's error cannot quote.
UNREADABLE_NAME = os.fsdecode(b"rows-\xff.csv")


class VecMulOnAFileName(VecMul):
    """VecMul whose perform fails naming a file it cannot find (UNREADABLE_NAME)."""

    def perform(self, node, inputs, output_storage):
        raise FileNotFoundError(f"no such file: {UNREADABLE_NAME}")


def test_the_ops_error_is_found_by_data_not_by_xlas_text(cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    f = pytensor.function([x, y], VecMulOnAFileName()(x, y), mode="JAX")
    with pytest.raises(FileNotFoundError, match="no such file: rows-") as caught:
        f(np.ones(2), np.ones(2))
    assert caught.value.args[0].endswith(UNREADABLE_NAME)


def test_a_failure_on_the_callers_thread_is_its_own():
    """Of the failures after a mark, the one reported on the caller's thread is taken, though
    another thread's came later; an error that is not XLA's runtime error has none."""
    import threading

    failures = _jax_ffi.Failures()
    mark = failures.mark()
    own, other = ValueError("this thread's"), ValueError("another thread's")
    failures.report(own, "Mine")
    elsewhere = threading.Thread(target=failures.report, args=(other, "Theirs"))
    elsewhere.start()
    elsewhere.join()
    assert failures.take(mark) == (own, "Mine")
    assert failures.take(mark) == (other, "Theirs")  # none of this thread's left
    assert failures.take(mark) is None  # each taken once
    mark = _jax_ffi.failure_mark()
    _jax_ffi.reported_error(own, "Mine")
    assert _jax_ffi.original_error(TypeError("raised while tracing"), since=mark) is None
    # Whatever XLA's text says: it is never read.
    assert _jax_ffi.original_error(jax.errors.JaxRuntimeError("INTERNAL"), since=mark) is own


def test_an_output_unlike_infer_shape_is_refused(cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    f = pytensor.function([x, y], VecMulWrongShape()(x, y), mode="JAX")
    with pytest.raises(
        ValueError,
        match=r"VecMulWrongShape: output 0 has shape \(3,\), but the op's infer_shape gives \(4,\)",
    ):
        f(np.ones(3), np.ones(3))


def test_an_undefined_data_gradient_is_never_asked_for(cache_dir):
    # numpyro and blackjax differentiate the parameters; the data is not differentiated, and a
    # differentiated value reaching it is an error (issue 34; test_jax_transforms.py has more).
    from pytensor.gradient import NullTypeGradError

    y, mu = pt.dvector("y"), pt.dscalar("mu")
    fn = jax_function([y, mu], [GaussLogLikeNoDataGrad()(y, mu)])
    data = np.array([0.5, 1.0, 2.0])
    g_mu = jax.jit(jax.grad(fn, argnums=1))(data, 0.25)
    np.testing.assert_allclose(float(g_mu), (data - 0.25).sum())
    with pytest.raises(NullTypeGradError, match="GaussLogLikeNoDataGrad's input 0"):
        jax.grad(fn, argnums=(0, 1))(data, 0.25)


def test_a_jaxlib_without_the_handler_warns_once_and_falls_back(monkeypatch, caplog, cache_dir):
    monkeypatch.setattr(_jax_ffi, "_state", {})

    def no_headers():
        raise RuntimeError("jaxlib 0.0 has no XLA FFI headers in /nowhere")

    monkeypatch.setattr(_jax_ffi, "_build_and_register", no_headers)
    x, y = pt.dvector("x"), pt.dvector("y")
    with caplog.at_level(logging.WARNING, logger="libsection"):
        for _ in range(2):
            fn = jax_function([x, y], [VecMul()(x, y)])
            np.testing.assert_array_equal(fn(np.ones(2), np.full(2, 2.0)), np.full(2, 2.0))
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "jax.pure_callback" in warnings[0].getMessage()
    assert "no XLA FFI headers in /nowhere" in warnings[0].getMessage()


def test_an_own_perform_keeps_the_callback_and_says_so(cache_dir, caplog):
    from backend_ops import VecMulWithPerform

    _jax._told.discard("VecMulWithPerform")
    x, y = pt.dvector("x"), pt.dvector("y")
    with caplog.at_level(logging.DEBUG, logger="libsection"):
        fn = jax_function([x, y], [VecMulWithPerform()(x, y)])
    np.testing.assert_array_equal(fn(np.ones(2), np.full(2, 3.0)), np.full(2, 3.0))
    assert any(
        "pure_callback, since its class defines perform" in r.getMessage() for r in caplog.records
    )


def test_an_input_the_op_destroys_is_copied_for_it(cache_dir):
    # The op doubles its input in place and returns it: JAX's buffers are not its to change.
    x = pt.dvector("x")
    fn = jax_function([x], [DoubleInPlace()(x)])
    f = jax.jit(fn)
    host = np.arange(3.0)
    device = jax.numpy.arange(3.0)
    assert custom_calls(f, host) == [_jax_ffi.TARGET]
    for _ in range(2):  # a second call sees the same input, not the first call's result
        np.testing.assert_array_equal(f(host), [0.0, 2.0, 4.0])
        np.testing.assert_array_equal(f(device), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(host, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(device, [0.0, 1.0, 2.0])
    batch = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(jax.jit(jax.vmap(fn))(batch), 2 * np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(batch, np.arange(6.0).reshape(2, 3))


def test_several_outputs_of_several_dtypes_come_back_whole(cache_dir):
    counts, weights, scale = pt.ivector("counts"), pt.fvector("weights"), pt.dscalar("scale")
    fn = jax_function([counts, weights, scale], MixedDtypes()(counts, weights, scale))
    f = jax.jit(fn)
    c = np.array([1, 2, 3], np.int32)
    w = np.array([-1.5, 0.0, 2.5], np.float32)
    assert custom_calls(f, c, w, 2.0) == [_jax_ffi.TARGET]
    total, scaled, positive = f(c, w, 2.0)
    assert (total.dtype, scaled.dtype, positive.dtype) == (np.int64, np.float32, np.bool_)
    assert total.shape == () and int(total) == 6
    np.testing.assert_array_equal(scaled, np.array([-3.0, 0.0, 5.0], np.float32))
    np.testing.assert_array_equal(positive, [False, False, True])
    # Batched: every output gets its batch dimension, each element its own values.
    totals, scaleds, positives = jax.jit(jax.vmap(fn, in_axes=(0, 0, None)))(
        np.stack([c, 2 * c]), np.stack([w, -w]), 2.0
    )
    np.testing.assert_array_equal(totals, [6, 12])
    np.testing.assert_array_equal(scaleds, np.array([2 * w, -2 * w]))
    np.testing.assert_array_equal(positives, [w > 0, -w > 0])


def test_concurrent_calls_of_one_function_run_at_once(cache_dir):
    # One jitted function, so one node instance, called from two threads: XLA runs both
    # calls, and the second runs on a spare while the first waits at the gate.
    a = pt.lscalar("a")
    f = jax.jit(jax_function([a], [Gate()(a)]))
    opened = GateState(opened=True)
    assert custom_calls(f, opened.address) == [_jax_ffi.TARGET]
    own_id = int(np.asarray(f(opened.address))[0])
    ids = {int(np.asarray(r)[0]) for r in calls_at_once(f, 2)}
    assert len(ids) == 2 and own_id in ids, (own_id, ids)


class KeepsItsInput:
    """PlusPrevious, whose struct keeps its input array for its next call, in JAX: under jit,
    `2 * x` is a buffer of XLA's, freed or reused once the call is over, so the array the op
    kept must hold its own data. ``overwrite`` writes over XLA's freed memory between calls.
    A call whose x[0] is negative keeps its input, then fails."""

    def __init__(self):
        from batched_ops import PlusPrevious

        from libsection.pytensor import pytensor_op

        class Shaped(PlusPrevious):
            func_files = ["data/batched/plus_previous.c"]

            def infer_shape(self, fgraph, node, input_shapes):
                return [input_shapes[0]]

        x = pt.dvector("x")
        self.fn = lambda: jax_function([x], [pytensor_op(Shaped())(2 * x)])
        self.overwrite = jax.jit(lambda a: a * 0 - 7.0)

    def between_calls(self):
        self.overwrite(np.ones((8, 4))).block_until_ready()


def test_an_input_the_op_keeps_outlives_xlas_buffer(cache_dir):
    keeps = KeepsItsInput()
    f = jax.jit(keeps.fn())
    calls = [np.arange(4.0) + 10 * k for k in range(4)]
    assert custom_calls(f, calls[0]) == [_jax_ffi.TARGET]
    out = []
    for c in calls:
        out.append(np.asarray(f(c)))
        keeps.between_calls()
    np.testing.assert_array_equal(out[0], 2 * calls[0])
    for before, now, got in zip(calls, calls[1:], out[1:], strict=False):
        np.testing.assert_array_equal(got, 2 * now + 2 * before)


def test_an_input_kept_by_a_call_that_failed_outlives_xlas_buffer(cache_dir):
    # The op stores its input, then fails: the array it kept must hold its own data too.
    keeps = KeepsItsInput()
    f = jax.jit(keeps.fn())
    failing = np.array([-1.0, 2.0, 3.0, 4.0])
    with pytest.raises(Exception, match="ArithmeticError in .*x\\[0\\] is negative"):
        f(failing).block_until_ready()
    keeps.between_calls()
    now = np.arange(4.0) + 10
    np.testing.assert_array_equal(np.asarray(f(now)), 2 * now + 2 * failing)


def test_a_row_the_op_keeps_outlives_xlas_buffer_under_vmap(cache_dir):
    # Under vmap the rows run in the batch's C loop: a row the op keeps, the last one past the
    # call, must hold its own data too.
    keeps = KeepsItsInput()
    g = jax.jit(jax.vmap(keeps.fn()))
    batches = [np.arange(12.0).reshape(3, 4) + 100 * k for k in range(4)]
    out = []
    for batch in batches:
        out.append(np.asarray(g(batch)))
        keeps.between_calls()
    np.testing.assert_array_equal(out[0][1:], 2 * batches[0][1:] + 2 * batches[0][:-1])
    for before, now, got in zip(batches, batches[1:], out[1:], strict=False):
        np.testing.assert_array_equal(got[0], 2 * now[0] + 2 * before[-1])
        np.testing.assert_array_equal(got[1:], 2 * now[1:] + 2 * now[:-1])
