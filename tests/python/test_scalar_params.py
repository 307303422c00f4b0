"""An op whose params type is a scalar type (not a ParamsType) and whose get_params returns a
plain Python number, or a NumPy scalar of another width, as PyTensor allows: the value goes
through the type's filter before the C code reads it, in every mode."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from backend_ops import ScaleByParam

MODES = ["CVM", "FAST_COMPILE", "NUMBA"] + (["JAX"] if importlib.util.find_spec("jax") else [])
VALUES = [
    ("int64", 3, 3.0),
    ("int64", np.int32(3), 3.0),
    ("int64", True, 1.0),
    ("int8", 5, 5.0),
    ("float64", 2.5, 2.5),
    ("float64", np.float32(0.5), 0.5),
    ("float32", 1.5, 1.5),
    ("bool", 1, 1.0),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("dtype", "value", "k"), VALUES)
def test_scalar_params_reach_the_c_code_in_every_mode(mode, dtype, value, k, cache_dir):
    x = pt.dvector("x")
    f = pytensor.function([x], ScaleByParam(dtype, value)(x), mode=mode)
    np.testing.assert_array_equal(f(np.arange(3.0)), k * np.arange(3.0))


def test_a_value_the_type_cannot_hold_is_refused(cache_dir):
    x = pt.dvector("x")
    with pytest.raises(TypeError):
        pytensor.function([x], ScaleByParam("int8", 1000)(x), mode="CVM")(np.ones(2))
