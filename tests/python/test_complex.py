"""complex64 and complex128 inputs and outputs, beside real ones, as PyTensor's own
ExternalCOp runs them: the drop-in in every mode, and the standalone op, on one C file."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt
from dropin_ops import DATA, OURS, THEIRS

import libsection

REAL = {"complex64": "float32", "complex128": "float64"}
MODES = ["CVM", "FAST_COMPILE", "NUMBA", "JAX"]


def values(dtype):
    x = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j], dtype=dtype)
    y = np.array([2.0, -1.0, 4.0], dtype=REAL[dtype])
    return x, y


def run(op, dtype, mode):
    x, y = pt.vector(dtype=dtype), pt.vector(dtype=REAL[dtype])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return pytensor.function([x, y], op(x, y), mode=mode)(*values(dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_a_complex_input_beside_a_real_one_runs_as_pytensors_own(dtype, mode, cache_dir):
    if mode == "JAX":
        pytest.importorskip("jax")  # the py312 stack pins it
    expected = run(THEIRS["ComplexScale"](), dtype, "CVM")  # PyTensor's own, in C
    x, y = values(dtype)
    np.testing.assert_allclose(expected, x * y)
    ours = run(OURS["ComplexScale"](), dtype, mode)
    assert ours.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(ours, expected)


class StandaloneComplexScale(libsection.ExternalCOp):
    func_files = [DATA / "complex_scale.c"]
    func_name = "APPLY_SPECIFIC(complex_scale)"

    def output_types(self, x, y):
        return [x]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_the_standalone_op_takes_and_gives_complex_arrays(dtype, cache_dir):
    x, y = values(dtype)
    z = StandaloneComplexScale()(x, y)
    assert z.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(z, x * y)


def test_a_complex_scalar_type_says_to_use_a_0d_array():
    with pytest.raises(ValueError, match=r"complex128.*0-d array, `complex128\[\]`"):
        libsection.build(
            DATA / "complex_scale.c",
            "APPLY_SPECIFIC(complex_scale)",
            ["complex128", "float64[:]"],
            ["complex128[:]"],
        )
