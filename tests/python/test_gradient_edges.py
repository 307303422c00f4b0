"""The derived gradient at its edges (issue 47): each case right, or refused before any code
runs naming the file, the line and the fix. An output made with a fixed `NPY_DOUBLE` (which
the numbers of the gradient's module would overflow) and an input converted with one (which
NumPy cannot cast) are refused where the gradient is asked for; state in the op's struct
starts afresh for each pass; state outside it (a static memo) is caught by reverse mode; an
infinite slope of one element leaves the others' derivatives alone. In both modes
(LIBSECTION_DERIVATIVE_MODE forces one).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.gradient import NullTypeGradError

import libsection

sys.path.insert(0, str(Path(__file__).resolve().parent / "data" / "gradient"))
from gradient_ops import (  # noqa: E402
    SLOPES,
    FixedInput,
    FixedOutput,
    KeptInput,
    Memo,
    Slopes,
    StaticMemo,
    memo_gradient,
)

pytestmark = pytest.mark.usefixtures("cache_dir")

MODES = ["forward", "reverse"]
X = np.array([0.5, -1.0, 2.0, 0.25])


def test_an_output_made_with_a_fixed_type_is_refused_before_any_code_runs():
    x = pt.dvector("x")
    out = FixedOutput()(x)
    # The op itself runs.
    np.testing.assert_array_equal(pytensor.function([x], out, mode="CVM")(X), 3 * X - 1)
    with pytest.raises(libsection.LinkError) as refused:
        pt.grad(out.sum(), x)
    message = str(refused.value)
    assert "FixedOutput: its gradient cannot be derived from its C code" in message
    assert (
        "fixed_output.c:10:60: error: `z` is made by `PyArray_EMPTY` with `NPY_DOUBLE`" in message
    )
    assert "write `TYPENUM_OUTPUT_0` in place of `NPY_DOUBLE`" in message


def test_an_input_converted_with_a_fixed_type_is_refused_naming_the_file_and_the_fix():
    x, w = pt.dvector("x"), pt.dvector("w")
    out = FixedInput()(x, w)
    assert pytensor.function([x, w], out, mode="CVM")(X, X) == pytest.approx(X @ X)
    with pytest.raises(NullTypeGradError) as refused:
        pt.grad(out, x)
    message = str(refused.value)
    assert "fixed_input.c:9:72: error: `PyArray_FROM_OTF` converts `x` with `NPY_DOUBLE`" in message
    assert "write `TYPENUM_INPUT_0` in place of `NPY_DOUBLE`" in message
    assert "read its elements as `DTYPE_INPUT_0`" in message
    assert "fixed_input.c:11" not in message  # w's conversion is fine while w is plain
    with pytest.raises(NullTypeGradError, match=r"fixed_input.c:11:72.*TYPENUM_INPUT_1"):
        pt.grad(out, w)


@pytest.mark.parametrize("mode", MODES)
def test_state_in_the_struct_starts_afresh_for_each_pass(monkeypatch, mode):
    # A memo of the last input and result: every forward pass runs on the same values, so
    # with one struct for all passes the later ones returned the first one's derivatives.
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", mode)
    x = pt.dvector("x")
    out = Memo()(x)
    f = pytensor.function([x], [out, pt.grad(out, x)], mode="CVM")
    xv = np.linspace(-1.0, 1.2, 10)
    previous = np.concatenate([[0.0], xv[:-1]])
    for _ in range(2):
        value, grad = f(xv)
        assert value == pytest.approx(np.sum(xv**2 * np.exp(previous)), rel=1e-14)
        np.testing.assert_allclose(grad, memo_gradient(xv), rtol=1e-12)


def test_state_outside_the_struct_kept_from_an_earlier_call_is_refused_in_reverse_mode(
    monkeypatch,
):
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "reverse")
    x = pt.dvector("x")
    out = StaticMemo()(x)
    f = pytensor.function([x], pt.grad(out, x), mode="CVM")
    np.testing.assert_allclose(f(X), 2 * X, rtol=1e-15)
    with pytest.raises(ValueError) as refused:
        f(X)  # the same values: the static memo's result, taped in the first call
    message = str(refused.value)
    assert "StaticMemo.pullback: the op's C code (" in message
    assert "static_memo.c" in message
    assert "kept from an earlier call" in message
    np.testing.assert_allclose(f(X + 1), 2 * (X + 1), rtol=1e-15)  # new values: no memo


# Points where one element's slope is infinite (or undefined: atan2 at (0, 0)).
SLOPE_POINTS = {
    0: [0.0, 1.0, 4.0, 9.0],
    1: [0.0, 1.0, 4.0, 9.0],
    2: [0.0, 1.0, 8.0, -27.0],
    3: [1.0, 0.5, 0.25, 0.0],
    4: [0.0, 1.0, 4.0, 9.0],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("which", sorted(SLOPE_POINTS))
def test_an_infinite_slope_leaves_the_other_elements_derivatives_alone(monkeypatch, mode, which):
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", mode)
    x = pt.dvector("x")
    xv = np.array(SLOPE_POINTS[which])
    got = pytensor.function([x], pt.grad(Slopes(which)(x).sum(), x), mode="CVM")(xv)
    if which in SLOPES:  # PyTensor's own gradient of the same function
        expected = pytensor.function([x], pt.grad(SLOPES[which](x).sum(), x), mode="CVM")(xv)
        assert got[0] == np.inf
    else:  # atan2(x, x) is constant where it is defined
        expected = np.zeros(4)
        assert np.isnan(got[0])
    np.testing.assert_allclose(got[1:], expected[1:], rtol=1e-14)


def test_an_input_array_the_op_keeps_is_not_written_into_by_a_later_call(monkeypatch):
    # The instance copies each call's input into the array of the last call, unless another
    # holds it: here the op, which reads that array in the next call.
    monkeypatch.setenv("LIBSECTION_DERIVATIVE_MODE", "forward")
    x = pt.dvector("x")
    out = KeptInput()(x)
    f = pytensor.function([x], [out, pt.grad(out, x)], mode="CVM")
    previous = 0.0
    for k in range(3):
        xv = X + k
        value, grad = f(xv)
        assert value == pytest.approx(xv.sum() + previous, rel=1e-15)
        np.testing.assert_array_equal(grad, np.ones_like(xv))
        previous = xv.sum()
