"""Forward and reverse mode of derived gradients (issue 47): one module holds the op's code on
dual numbers and on taped numbers, and each call picks (LIBSECTION_DERIVATIVE_MODE: auto, the
default, forward passes for few differentiated scalars and reverse mode for many; `forward`
and `reverse` force one). Both equal the hand-written gradients at several sizes, in each
PyTensor mode; the tape is bounded by LIBSECTION_TAPE_MAX_BYTES (auto then falls back on
forward passes, said once by a RuntimeWarning; a forced reverse mode fails naming the op, its
file and the limit).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from libsection import _gradient
from libsection.pytensor import pytensor_op

sys.path.insert(0, str(Path(__file__).resolve().parent / "data" / "gradient"))
from gradient_ops import (  # noqa: E402
    Ema,
    EmaHand,
    Logistic,
    LogisticHand,
    PowerSum,
    PowerSumHand,
    SoftClip,
    StaticMemo,
    WeightedLogSumExp,
    WeightedLogSumExpHand,
    logistic_data,
    softclip_graph,
)

pytestmark = pytest.mark.usefixtures("cache_dir")

SETTINGS = ["forward", "reverse", "auto"]
RTOL = 1e-10


def _points(n: int):
    rng = np.random.default_rng(n)
    return rng.normal(size=n), rng.uniform(0.5, 2.0, size=n)


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("n", [3, 40, 400])
def test_every_mode_is_the_hand_written_gradient_at_several_sizes(monkeypatch, setting, n):
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", setting)
    x, w, a = pt.dvector("x"), pt.dvector("w"), pt.dscalar("a")
    xv, wv = _points(n)
    got, hand = [], []
    for ops, into in (((WeightedLogSumExp, Ema), got), ((WeightedLogSumExpHand, EmaHand), hand)):
        lse, ema = ops[0]()(x, w), ops[1]()(x, pt.scalar_from_tensor(a))
        cost = lse + pt.dot(ema, w)
        into.extend(pytensor.function([x, w, a], pt.grad(cost, [x, w, a]), mode="CVM")(xv, wv, 0.3))
    for g, h in zip(got, hand, strict=True):
        np.testing.assert_allclose(g, h, rtol=RTOL, atol=1e-13)


@pytest.mark.parametrize("setting", SETTINGS)
def test_every_mode_against_central_differences(monkeypatch, setting):
    # SoftClip: a code section, two outputs (an array and a number), branches on values.
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", setting)
    x, limit = pt.dvector("x"), pt.dscalar("limit")
    xv = np.linspace(-2.0, 2.5, 30)
    probe = np.cos(np.arange(30.0))
    y, mean = SoftClip()(x, pt.scalar_from_tensor(limit))
    cost = pt.dot(y, probe) + 3 * pt.tensor_from_scalar(mean)
    f = pytensor.function([x, limit], [cost, *pt.grad(cost, [x, limit])], mode="CVM")
    _, dx, dlimit = f(xv, 2.2)
    step = 1e-6
    central = np.array(
        [(f(xv + step * e, 2.2)[0] - f(xv - step * e, 2.2)[0]) / (2 * step) for e in np.eye(30)]
    )
    np.testing.assert_allclose(dx, central, rtol=1e-6, atol=1e-8)
    y_ref, mean_ref = softclip_graph(x, limit)
    ref = pt.dot(y_ref, probe) + 3 * mean_ref
    hand = pytensor.function([x, limit], pt.grad(ref, [x, limit]), mode="FAST_COMPILE")(xv, 2.2)
    np.testing.assert_allclose(dx, hand[0], rtol=RTOL, atol=1e-14)
    assert dlimit == pytest.approx(hand[1], rel=RTOL)


@pytest.mark.parametrize("setting", ["forward", "reverse"])
@pytest.mark.parametrize("mode", ["FAST_COMPILE", "NUMBA"])
def test_both_modes_in_every_backend(monkeypatch, setting, mode):
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", setting)
    theta = pt.tensor("theta", dtype="float64", shape=(3,))
    obs = logistic_data()
    x, n, c = pt.dvector("x"), pt.lscalar("n"), pt.dscalar("c")
    xv = np.array([0.5, -1.5, 2.0, 0.25, 1.25])
    results = {}
    for name, logistic, power in (
        ("derived", Logistic(), PowerSum()),
        ("hand", LogisticHand(), PowerSumHand()),
    ):
        ll = pytensor_op(logistic)(theta, obs)
        ps = pytensor_op(power)(x, n, c)
        f = pytensor.function(
            [theta, x, n, c], [pt.grad(ll, theta), *pt.grad(ps, [x, c])], mode=mode
        )
        results[name] = f(np.array([0.7, 9.0, 0.6]), xv, 3, 1.7)
    for d, h in zip(results["derived"], results["hand"], strict=True):
        np.testing.assert_allclose(d, h, rtol=RTOL)


def test_auto_runs_forward_passes_for_few_scalars_and_reverse_mode_for_many(monkeypatch):
    # A static memo returns the first call's numbers: reverse mode tells them from this call's
    # (they are on an earlier tape), one forward pass does not need to (its seeds are the same).
    monkeypatch.delenv("LIBSECTION_DERIVATIVE_MODE", raising=False)
    x = pt.dvector("x")
    f = pytensor.function([x], pt.grad(StaticMemo()(x), x), mode="CVM")
    (node,) = [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, _gradient.DerivedGradient)]
    few = np.arange(1.0, _gradient.WIDTH + 1)  # one forward pass
    many = np.arange(1.0, 41.0)
    for _ in range(2):
        np.testing.assert_allclose(f(few), 2 * few)
    f(many)
    with pytest.raises(ValueError, match="kept from an earlier call"):
        f(many)


def test_a_tape_over_its_limit_falls_back_on_forward_passes(monkeypatch):
    monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "4K")
    x, w = pt.dvector("x"), pt.dvector("w")
    xv, wv = _points(500)  # some 3,000 operations: 96 KiB of tape
    got = pytensor.function([x, w], pt.grad(WeightedLogSumExp()(x, w), [x, w]), mode="CVM")
    hand = pytensor.function([x, w], pt.grad(WeightedLogSumExpHand()(x, w), [x, w]), mode="CVM")
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "auto")
    with pytest.warns(RuntimeWarning, match="LIBSECTION_TAPE_MAX_BYTES=4096 at 128 operations"):
        falling_back = got(xv, wv)
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "forward")
    for result in (falling_back, got(xv, wv)):
        for g, h in zip(result, hand(xv, wv), strict=True):
            np.testing.assert_allclose(g, h, rtol=RTOL)
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "reverse")
    with pytest.raises(MemoryError) as refused:
        got(xv, wv)
    message = str(refused.value)
    assert "WeightedLogSumExp.pullback: its gradient is derived in reverse mode" in message
    assert "logsumexp.c" in message
    assert "32 bytes per operation" in message
    assert "LIBSECTION_TAPE_MAX_BYTES=4096" in message
    monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "64M")  # the same module, a larger tape
    for g, h in zip(got(xv, wv), hand(xv, wv), strict=True):
        np.testing.assert_allclose(g, h, rtol=RTOL)


def test_the_runtime_counts_each_reverse_mode_tape(monkeypatch):
    from libsection import _core

    x, w = pt.dvector("x"), pt.dvector("w")
    f = pytensor.function([x, w], pt.grad(WeightedLogSumExp()(x, w), [x, w]), mode="CVM")
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "reverse")
    sizes = {}
    for n in (50, 500):
        _core.tape_bytes(reset=True)
        f(*_points(n))
        last, peak = _core.tape_bytes()
        assert last == peak > 0
        sizes[n] = last
    assert 8 < sizes[500] / sizes[50] < 12  # an entry per operation: linear in N
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "forward")
    _core.tape_bytes(reset=True)
    f(*_points(500))
    assert _core.tape_bytes() == (sizes[500], 0)  # forward passes keep no tape
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "auto")
    monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "4K")
    with pytest.warns(RuntimeWarning, match="runs forward passes"):
        f(*_points(500))  # the tape stops at its limit, and forward passes run
    assert 0 < _core.tape_bytes()[1] <= 4096


def _modes() -> list[str]:
    try:
        import jax  # noqa: F401
    except ImportError:
        return ["CVM", "NUMBA"]
    return ["CVM", "NUMBA", "JAX"]


def _fell_back(caught) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, RuntimeWarning) and "runs forward passes" in str(w.message)
    ]


@pytest.mark.parametrize("mode", _modes())
def test_a_fall_back_on_forward_passes_is_told_once_naming_the_fix(monkeypatch, mode):
    # auto, a tape over its limit: forward passes, one per 8 scalars (here 500 of them), which
    # the user is told once per compiled function, with the op, its file, the limit and the fix.
    monkeypatch.delenv("LIBSECTION_DERIVATIVE_MODE", raising=False)
    monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "64K")
    x, w = pt.dvector("x"), pt.dvector("w")
    xv, wv = _points(2000)  # some 12,000 operations: 384 KiB of tape
    got = pytensor.function([x, w], pt.grad(WeightedLogSumExp()(x, w), [x, w]), mode=mode)
    hand = pytensor.function([x, w], pt.grad(WeightedLogSumExpHand()(x, w), [x, w]), mode=mode)
    expected = hand(xv, wv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            for g, h in zip(got(xv, wv), expected, strict=True):
                np.testing.assert_allclose(g, h, rtol=RTOL)
    (message,) = _fell_back(caught)
    assert message.startswith("WeightedLogSumExp.pullback (")
    assert "logsumexp.c): its gradient's tape reached LIBSECTION_TAPE_MAX_BYTES=65536" in message
    assert "at 2048 operations (65536 bytes)" in message
    assert "one pass per 8 of its 4000 differentiated scalars (500 passes)" in message
    assert "raise LIBSECTION_TAPE_MAX_BYTES" in message
    assert "LIBSECTION_DERIVATIVE_MODE=forward" in message


def test_a_fall_back_told_as_an_error_is_the_calls_error(monkeypatch):
    # `-W error` (here its filter): the warning is the call's exception, each time, not a crash.
    monkeypatch.delenv("LIBSECTION_DERIVATIVE_MODE", raising=False)
    monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "64K")
    x, w = pt.dvector("x"), pt.dvector("w")
    xv, wv = _points(2000)
    got = pytensor.function([x, w], pt.grad(WeightedLogSumExp()(x, w), [x, w]), mode="CVM")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            with pytest.raises(RuntimeWarning, match="LIBSECTION_TAPE_MAX_BYTES=65536"):
                got(xv, wv)
    hand = pytensor.function([x, w], pt.grad(WeightedLogSumExpHand()(x, w), [x, w]), mode="CVM")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for g, h in zip(got(xv, wv), hand(xv, wv), strict=True):
            np.testing.assert_allclose(g, h, rtol=RTOL)
    assert len(_fell_back(caught)) == 1


def test_no_fall_back_is_told_when_forward_passes_are_asked_for_or_the_tape_holds(monkeypatch):
    x, w = pt.dvector("x"), pt.dvector("w")
    xv, wv = _points(2000)
    got = pytensor.function([x, w], pt.grad(WeightedLogSumExp()(x, w), [x, w]), mode="CVM")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "64K")
        monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "forward")
        got(xv, wv)
        monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "64M")
        monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "auto")
        got(xv, wv)
    assert _fell_back(caught) == []


@pytest.mark.parametrize(
    ("name", "value"),
    [("LIBSECTION_DERIVATIVE_MODE", "sideways"), ("LIBSECTION_TAPE_MAX_BYTES", "lots")],
)
def test_a_bad_setting_is_refused_naming_it_when_the_gradient_runs(monkeypatch, name, value):
    x, w = pt.dvector("x"), pt.dvector("w")
    f = pytensor.function([x, w], pt.grad(WeightedLogSumExp()(x, w), x), mode="CVM")
    monkeypatch.setenv(name, value)  # set after the build, which would have refused it
    with pytest.raises(ValueError, match=rf"{name}={value}: give "):
        f(*_points(5))


def test_each_call_reads_the_settings_as_they_are_then(monkeypatch):
    # A call parses a setting again only when its text changed since the thread's last call:
    # a bad value is refused at each call, a value set back after one is the value again, and
    # unsetting one gives its default back.
    x, w = pt.dvector("x"), pt.dvector("w")
    xv, wv = _points(500)  # some 3,000 operations: 96 KiB of tape
    got = pytensor.function([x, w], pt.grad(WeightedLogSumExp()(x, w), x), mode="CVM")
    hand = pytensor.function([x, w], pt.grad(WeightedLogSumExpHand()(x, w), x), mode="CVM")
    monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "4K")
    for _ in range(2):
        monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "reverse")
        with pytest.raises(MemoryError, match="LIBSECTION_TAPE_MAX_BYTES=4096"):
            got(xv, wv)
        monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "sideways")
        with pytest.raises(ValueError, match="LIBSECTION_DERIVATIVE_MODE=sideways: give "):
            got(xv, wv)
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "reverse")
    monkeypatch.delenv("LIBSECTION_TAPE_MAX_BYTES")  # 1 GiB: the tape holds the call
    np.testing.assert_allclose(got(xv, wv), hand(xv, wv), rtol=RTOL)
    monkeypatch.setenv("LIBSECTION_TAPE_MAX_BYTES", "4K")
    with pytest.raises(MemoryError, match="LIBSECTION_TAPE_MAX_BYTES=4096"):
        got(xv, wv)
    monkeypatch.delenv("LIBSECTION_DERIVATIVE_MODE")  # auto: forward passes past the limit
    with pytest.warns(RuntimeWarning, match="runs forward passes"):
        np.testing.assert_allclose(got(xv, wv), hand(xv, wv), rtol=RTOL)


@pytest.mark.parametrize("setting", ["forward", "reverse"])
def test_a_gradient_is_written_into_the_array_kept_from_the_last_call(monkeypatch, setting):
    # PyTensor without garbage collection keeps a node's outputs between calls for the op to
    # reuse: the gradient is written into the array kept when it has the input's shape and
    # dtype, and a new array is made when it has not.
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", setting)
    x, w = pt.dvector("x"), pt.dvector("w")
    mode = pytensor.compile.mode.Mode(linker="cvm_nogc")
    grads = {}
    for name, op in (("derived", WeightedLogSumExp()), ("hand", WeightedLogSumExpHand())):
        grads[name] = pt.grad(op(x, w), [x, w])
    # Each gradient used, not returned: the function's outputs are its own arrays.
    got = pytensor.function([x, w], [g.sum() * g[0] for g in grads["derived"]], mode=mode)
    hand = pytensor.function([x, w], [g.sum() * g[0] for g in grads["hand"]], mode="CVM")
    (node,) = [
        n for n in got.maker.fgraph.apply_nodes if isinstance(n.op, _gradient.DerivedGradient)
    ]
    kept = []
    for n in (5, 5, 3, 3, 4):
        xv, wv = _points(n)
        for g, h in zip(got(xv, wv), hand(xv, wv), strict=True):
            np.testing.assert_allclose(g, h, rtol=RTOL)
        arrays = [got.vm.storage_map[o][0] for o in node.outputs]
        if kept and kept[0].shape == (n,):
            assert all(a is k for a, k in zip(arrays, kept, strict=True))
        else:
            assert not any(a is k for a, k in zip(arrays, kept, strict=False))
        kept = arrays
