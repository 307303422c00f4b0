"""Every example op inside pytensor.function, in every mode, against NumPy; an op written as
PyTensor's ExternalCOp tutorial writes one, moved over by its import; PyTensor function pickling."""

from __future__ import annotations

import abc
import importlib.util
import pickle
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from examples import EXAMPLES

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt

from libsection.pytensor import pytensor_op

MODES = ["CVM", "FAST_COMPILE", "NUMBA", "FAST_RUN"]  # FAST_RUN is Numba in PyTensor 3
TUTORIAL = Path(__file__).resolve().parent / "data/tutorial"


def symbolic(value):
    if isinstance(value, np.ndarray):
        return pt.tensor(dtype=value.dtype.name, shape=(None,) * value.ndim)
    return pt.scalar(dtype="float64")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.folder)
def test_op_in_pytensor_function_matches_numpy(example, mode, cache_dir):
    values = example.inputs()
    variables = [symbolic(v) for v in values]
    op = pytensor_op(example.op())
    outputs = op(*variables)
    f = pytensor.function(variables, outputs, mode=mode)
    expected = example.expected(*values)
    result = f(*values)
    if isinstance(expected, tuple):
        for r, e in zip(result, expected, strict=True):
            np.testing.assert_allclose(r, e, rtol=1e-12)
    else:
        np.testing.assert_allclose(result, expected, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_op_raises_its_python_error_in_every_mode(mode, cache_dir):
    example = next(e for e in EXAMPLES if e.folder == "checked_log")
    x = pt.vector(dtype="float64")
    f = pytensor.function([x], pytensor_op(example.op())(x), mode=mode)
    with pytest.raises(ValueError, match="checked_log: x\\[1\\] = -2 is not positive"):
        f(np.array([1.0, -2.0]))


def load_tutorial_module(name: str, text: str):
    """tests/python/data/tutorial/tutorial_op.py (given as text) as module `name`, imported from
    its own folder as `import tutorial_op` would: the class finds its .c file beside it."""
    module_file = TUTORIAL / "tutorial_op.py"
    spec = importlib.util.spec_from_file_location(name, module_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(text, str(module_file), "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("mode", MODES)
def test_tutorial_style_op_runs_in_every_mode(mode, cache_dir):
    text = (TUTORIAL / "tutorial_op.py").read_text()
    # Written against PyTensor's API; libsection is only its ExternalCOp import.
    assert [line for line in text.splitlines() if "libsection" in line and '"' not in line] == [
        "from libsection.pytensor import ExternalCOp"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no FutureWarning, no fallback warning
        module = load_tutorial_module(f"tutorial_op_{mode}", text)
        op = module.VectorMaximum()
        x, y = pt.dvector(), pt.dvector()
        f = pytensor.function([x, y], op(x, y), mode=mode)
        a, b = np.array([3.0, -1.0, 2.5, 0.0, 7.0]), np.linspace(1, 2, 5)
        np.testing.assert_array_equal(f(a, b), np.maximum(a, b))
        np.testing.assert_array_equal(f(a[::2], b[::2]), np.maximum(a[::2], b[::2]))
        with pytest.raises(
            ValueError, match=re.escape("Shape mismatch: x.shape[0] == 5 and y.shape[0] == 3")
        ):
            f(a, b[:3])


def test_tutorial_style_op_computes_what_pytensors_externalcop_computes(cache_dir):
    """The same file with the import PyTensor's tutorial has: the migration changes one line."""
    text = (TUTORIAL / "tutorial_op.py").read_text()
    original = text.replace(
        "from libsection.pytensor import ExternalCOp", "from pytensor.link.c.op import ExternalCOp"
    )
    module = load_tutorial_module("tutorial_op_original", original)

    cls = module.VectorMaximum
    if getattr(cls, "__abstractmethods__", None):  # PyTensor 3.3's COp needs a perform; CVM runs C
        cls.perform = lambda self, node, inputs, outputs: None
        abc.update_abstractmethods(cls)
    op = cls()
    x, y = pt.dvector(), pt.dvector()
    f = pytensor.function([x, y], op(x, y), mode="CVM")
    a, b = np.array([3.0, -1.0, 2.5]), np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(f(a, b), np.maximum(a, b))


@pytest.mark.parametrize("mode", ["CVM", "FAST_COMPILE", "NUMBA"])
def test_pytensor_functions_with_these_ops_pickle(mode, cache_dir):
    example = next(e for e in EXAMPLES if e.folder == "scale_shift")
    x = pt.vector(dtype="float64")
    f = pytensor.function([x], pytensor_op(example.op())(x), mode=mode)
    g = pickle.loads(pickle.dumps(f))
    values = example.inputs()
    np.testing.assert_allclose(g(*values), example.expected(*values))


@pytest.mark.parametrize("mode", MODES)
def test_op_with_a_pullback_differentiates_in_every_mode(mode, cache_dir):
    """The likelihood op of test_pymc (C value, gradient in PyTensor terms) on every stack."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "data/pymc"))
    from gaussian_ops import NegHalfSquare

    x = pt.dvector("x")
    value = NegHalfSquare()(x)
    f = pytensor.function([x], [value, pytensor.grad(value.sum(), x)], mode=mode)
    a = np.array([1.0, -2.0, 0.5])
    value_at_a, gradient_at_a = f(a)
    np.testing.assert_array_equal(value_at_a, -0.5 * a * a)
    np.testing.assert_array_equal(gradient_at_a, -a)
