"""A function that computes an op's value and its derived gradient runs the op's code once on
taped numbers: a rewrite makes the op's node a ``TapedValues`` node, whose taped pass gives the
values and leaves its tape in the runtime, and the pullback sweeps it rather than running the
op again and taping a pass of its own (python/libsection/_gradient.py, the record op of
linker/generate/derivative_driver.cpp). A recording only saves time: a pullback that finds none
of its inputs runs its own pass, and the values are the op's own to rounding.

The op (tests/python/data/gradient/ema.c): an exponential moving average of a vector with a
buffer in its struct, beside the same op with a hand-written gradient.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from libsection import _core, _gradient

sys.path.insert(0, str(Path(__file__).resolve().parent / "data" / "gradient"))
from gradient_ops import (  # noqa: E402
    Counted,
    Ema,
    EmaHand,
    MemcpySquare,
    WeightedLogSumExp,
    WeightedLogSumExpHand,
)

MODES = ["CVM", "FAST_COMPILE", "NUMBA", "JAX"]  # JAX: on the stacks that pin it
N = 60
W = np.cos(np.arange(N, dtype=float))
X = np.sin(0.3 * np.arange(N, dtype=float))

pytestmark = pytest.mark.usefixtures("cache_dir")


def _mode(mode: str):
    if mode == "JAX":
        pytest.importorskip("jax")
    return mode


def value_and_gradient(op, mode, wrt=("x", "a"), rewrite=True):
    x, a = pt.dvector("x"), pt.dscalar("a")
    cost = (W * op(x, a)).sum()
    outputs = [cost, *pytensor.grad(cost, [{"x": x, "a": a}[name] for name in wrt])]
    mode = pytensor.compile.mode.get_mode(_mode(mode))
    if not rewrite:
        mode = mode.excluding("libsection_record_for_pullback")
    return pytensor.function([x, a], outputs, mode=mode)


def recorded(f) -> list:
    return [n.op for n in f.maker.fgraph.apply_nodes if isinstance(n.op, _gradient.TapedValues)]


@pytest.mark.parametrize("mode", MODES)
def test_a_value_and_its_gradient_sweep_the_values_tape(mode):
    f = value_and_gradient(Ema(), mode)
    plain = value_and_gradient(Ema(), mode, rewrite=False)
    hand = value_and_gradient(EmaHand(), mode)
    assert [str(op) for op in recorded(f)] == ["Ema.record"]
    assert recorded(plain) == [] and recorded(hand) == []
    for k in range(4):  # the first call compares the taped values with the plain pass's
        a = 0.2 + 0.15 * k
        expected, exact = plain(X, a), hand(X, a)  # before f records these inputs
        _core.recordings_swept(reset=True)
        got = [np.asarray(g) for g in f(X, a)]  # JAX returns before its calls end
        assert _core.recordings_swept() == 1
        for g, e, h in zip(got, expected, exact, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-14)
            np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)
    # A recording is the op's on these inputs, whichever function made it.
    _core.recordings_swept(reset=True)
    np.testing.assert_allclose(np.asarray(plain(X, a)[1]), got[1], rtol=1e-13)
    assert _core.recordings_swept() == 1


@pytest.mark.parametrize("mode", ["CVM", "NUMBA"])
def test_few_differentiated_scalars_take_plain_passes_and_forward_mode(mode):
    """The gradient of the rate alone is one scalar: forward passes, so the values come from
    the op's code on plain numbers and nothing is recorded."""
    f = value_and_gradient(Ema(), mode, wrt=("a",))
    hand = value_and_gradient(EmaHand(), mode, wrt=("a",))
    assert len(recorded(f)) == 1
    _core.recordings_swept(reset=True)
    for g, h in zip(f(X, 0.4), hand(X, 0.4), strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-10)
    assert _core.recordings_swept() == 0


@pytest.mark.parametrize("rewrite", [True, False])
def test_plain_passes_keep_the_ops_struct_between_calls(rewrite):
    """With few differentiated scalars the record op runs the op's code on plain numbers: in
    one struct it keeps, as the op's own module does (a costly init_code_struct is paid once),
    so the struct's count of calls goes on as the op's own."""
    x, a = pt.dvector("x"), pt.dscalar("a")
    y, calls = Counted()(x, a)
    cost = (y * y).sum()
    mode = pytensor.compile.mode.get_mode("CVM")
    if not rewrite:
        mode = mode.excluding("libsection_record_for_pullback")
    f = pytensor.function([x, a], [cost, calls, *pytensor.grad(cost, [x, a])], mode=mode)
    assert bool(recorded(f)) == rewrite
    x0 = np.array([1.0, -2.0])
    for call in (1, 2, 3):
        value, count, g_x, g_a = f(x0, 0.5)
        assert int(count) == call
        np.testing.assert_allclose(g_x, 2 * 0.5**2 * x0)
        np.testing.assert_allclose(g_a, 2 * 0.5 * (x0 * x0).sum())


@pytest.mark.parametrize("setting", ["forward", "reverse"])
def test_the_derivative_mode_setting_decides_whether_values_are_taped(monkeypatch, setting):
    f = value_and_gradient(Ema(), "CVM")
    hand = value_and_gradient(EmaHand(), "CVM")
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", setting)
    _core.recordings_swept(reset=True)
    for g, h in zip(f(X, 0.4), hand(X, 0.4), strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-10)
    assert _core.recordings_swept() == (1 if setting == "reverse" else 0)


def test_each_pullback_sweeps_the_recording_of_its_own_inputs():
    """Two functions of the same op, run at once in two threads with different inputs: each
    pullback finds the recording of its inputs (the runtime keeps them by the op's code and
    the inputs' bytes), or runs its own pass; every gradient is right."""
    functions = [value_and_gradient(Ema(), "CVM") for _ in range(2)]
    hand = value_and_gradient(EmaHand(), "CVM")
    rates = [0.1 + 0.02 * k for k in range(40)]
    expected = {a: hand(X, a) for a in rates}
    failures: list[str] = []

    def run(f, mine):
        for a in mine:
            for g, h in zip(f(X, a), expected[a], strict=True):
                if not np.allclose(g, h, rtol=1e-10, atol=1e-12):
                    failures.append(f"a={a}: {g} != {h}")

    threads = [threading.Thread(target=run, args=(f, rates[k::2])) for k, f in enumerate(functions)]
    _core.recordings_swept(reset=True)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert _core.recordings_swept() > 0


def test_a_recording_is_found_by_the_bytes_of_its_inputs_alone():
    """A recording left by one function is swept by another's pullback (the same op's code)
    given the same inputs, and not when one element or the rate differs: those pullbacks run
    their own pass and their gradients stay right."""
    recording = value_and_gradient(Ema(), "CVM")
    pullback_only = value_and_gradient(Ema(), "CVM", rewrite=False)
    hand = value_and_gradient(EmaHand(), "CVM")
    other_x = X.copy()
    other_x[N // 2] += 1e-9
    for x, a, found in [(X, 0.3, 1), (other_x, 0.3, 0), (X, 0.31, 0), (X[::-1], 0.3, 0)]:
        recording(X, 0.3)
        _core.recordings_swept(reset=True)
        got = pullback_only(x, a)
        assert _core.recordings_swept() == found, (a, x[N // 2])
        for g, h in zip(got, hand(x, a), strict=True):
            np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)


LARGE_TAPE = """
import json, sys
sys.path.insert(0, {data!r})
import numpy as np, pytensor, pytensor.tensor as pt
from gradient_ops import Ema
from libsection import _core
x, a = pt.dvector("x"), pt.dscalar("a")
cost = (pt.cos(pt.arange(x.shape[0])) * Ema()(x, a)).sum()
mode = pytensor.compile.mode.get_mode("CVM")
recorded = pytensor.function([x, a], [cost, *pytensor.grad(cost, [x, a])], mode=mode)
own = pytensor.function(
    [x, a], [cost, *pytensor.grad(cost, [x, a])],
    mode=mode.excluding("libsection_record_for_pullback"),
)
xs = np.sin(np.arange({n}) * 0.3)
out = {{"same": [], "swept": [], "tape": [], "held": []}}
for rate in (0.3, 0.4, 0.3):
    _core.recordings_swept(reset=True)
    got = recorded(xs, rate)
    out["swept"].append(_core.recordings_swept())
    out["tape"].append(_core.tape_bytes()[0])
    out["held"].append(_core.recordings_held()[1])
    want = own(xs, rate)
    out["same"].append(  # the value to rounding (taped values), the gradients exactly
        bool(np.allclose(got[0], want[0], rtol=1e-12, atol=0))
        and all(np.array_equal(g, h) for g, h in zip(got[1:], want[1:]))
    )
print(json.dumps(out))
"""


def test_a_tape_larger_than_a_pass_keeps_is_swept_whole(tmp_path):
    """A value and gradient whose tape passes the 64 MiB a pass keeps between calls (Ema at
    560,000 elements, about 72 MB): the record op's pass leaves its tape whole in the
    recording, the pullback sweeps it, and the next call records on the same storage. In a
    process of its own: the record op's pass used to give back the recording's storage as its
    own, and the pullback swept freed memory (a segmentation fault)."""
    code = LARGE_TAPE.format(
        data=str(Path(__file__).resolve().parent / "data" / "gradient"), n=560_000
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard
    )
    assert done.returncode == 0, f"the process failed ({done.returncode}):\n{done.stderr[-3000:]}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert min(out["tape"]) > 64 << 20, out["tape"]
    assert out["swept"] == [1, 1, 1]
    assert out["same"] == [True, True, True]  # as the pullback's own taped pass gives them
    # one recording kept whole, its storage reused call after call (within the runtime's 512 MiB)
    assert len(set(out["held"])) == 1 and min(out["tape"]) < out["held"][0] <= 512 << 20, out


def test_values_the_taped_pass_gets_wrong_stay_the_ops_own():
    """An op whose code copies its values as plain doubles (a memcpy of n * sizeof(double)):
    on taped numbers its values are wrong. The record op's first call compares them with the
    plain pass and keeps to plain passes; the pullback, finding no recording, refuses the
    gradient as it always has."""
    x = pt.dvector("x")
    cost = MemcpySquare()(x).sum()
    f = pytensor.function([x], [cost, pytensor.grad(cost, x)], mode="CVM")
    assert len(recorded(f)) == 1
    xs = np.linspace(0.5, 2.0, 20)  # 20 scalars: reverse mode
    for _ in range(2):
        with pytest.raises(ValueError) as refused:
            f(xs)
        assert "MemcpySquare output 0: its gradient is derived by running its C code" in str(
            refused.value
        )
        assert "where the op's own module computes" in str(refused.value)
    np.testing.assert_array_equal(pytensor.function([x], cost, mode="CVM")(xs), (xs * xs).sum())


@pytest.mark.parametrize("argnums", [(0, 1), (0,)])
def test_jax_differentiation_sweeps_the_tape_of_the_values_pass(argnums):
    """``jax.value_and_grad`` of the op in JAX: the values come from a taped pass (the jvp of
    the op's call), which the pullback's derived gradient sweeps; the data JAX holds constant
    is not differentiated."""
    jax = pytest.importorskip("jax")
    x, a = pt.dvector("x"), pt.dscalar("a")
    functions = {}
    for op in (Ema(), EmaHand()):
        fn = pytensor.function([x, a], (W * op(x, a)).sum(), mode="JAX").vm.jit_fn
        functions[op] = jax.jit(jax.value_and_grad(lambda xs, r, fn=fn: fn(xs, r)[0], argnums))
    derived, hand = functions.values()
    for k in range(3):
        rate = 0.3 + 0.1 * k
        expected = jax.block_until_ready(hand(X, rate))
        _core.recordings_swept(reset=True)
        got = jax.block_until_ready(derived(X, rate))
        assert _core.recordings_swept() == 1
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-13)
        for g, h in zip(got[1], expected[1], strict=True):
            np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)


def test_the_rows_of_a_batch_take_plain_passes():
    """Under ``jax.vmap`` (one C loop over the rows) each row would leave a recording, more
    than the runtime keeps: the values of a batch come from plain passes, and each row's
    pullback runs its own."""
    jax = pytest.importorskip("jax")
    x, w = pt.dvector("x"), pt.dvector("w")
    rows = np.stack([X * (1 + 0.05 * k) for k in range(20)])
    results = []
    for op in (WeightedLogSumExp(), WeightedLogSumExpHand()):
        fn = pytensor.function([x, w], op(x, w), mode="JAX").vm.jit_fn
        grad = jax.grad(lambda xs, ws, fn=fn: fn(xs, ws)[0])
        batched = jax.jit(jax.vmap(grad, in_axes=(0, None)))
        _core.recordings_swept(reset=True)
        results.append(np.asarray(jax.block_until_ready(batched(rows, np.abs(W) + 0.1))))
        assert _core.recordings_swept() == 0
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10, atol=1e-12)
