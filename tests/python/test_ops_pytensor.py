"""Every example op inside pytensor.function, in every mode, against NumPy; the seed tutorial's
op migrated by changing its imports; PyTensor function pickling."""

from __future__ import annotations

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
import pytensor.tensor as pt  # noqa: E402

from libsection.pytensor import pytensor_op  # noqa: E402

MODES = ["CVM", "FAST_COMPILE", "NUMBA", "FAST_RUN"]  # FAST_RUN is Numba in PyTensor 3
SEEDS = Path(__file__).resolve().parents[3] / "shared/seeds"


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


def seed_tutorial() -> tuple[str, str]:
    """The tutorial's ExternalCOp Python class and its C file, verbatim from the seed."""
    text = (SEEDS / "000_0be9cca5122c273d.txt").read_text()
    start = text.index(".. testcode::\n\n    import aesara\n    from aesara.link.c.op import ExternalCOp")
    python = text[start:].split("\n\n", 1)[1].split("\nAnd the following", 1)[0]
    c_start = text.index(".. code-block:: c\n\n    #section support_code")
    c_code = text[c_start:].split("\n\n", 1)[1].split("\nAs you can see", 1)[0]
    dedent = lambda block: "\n".join(line[4:] for line in block.splitlines()) + "\n"  # noqa: E731
    return dedent(python), dedent(c_code)


@pytest.mark.parametrize("mode", MODES)
def test_seed_tutorial_op_migrates_by_changing_its_imports(mode, tmp_path, cache_dir):
    python, c_code = seed_tutorial()
    # The import lines are the only change; the tutorial imports Apply earlier on its page.
    migrated = python.replace("import aesara\n", "import pytensor as aesara\nfrom pytensor.graph.basic import Apply\n", 1)
    migrated = migrated.replace("from aesara.link.c.op import ExternalCOp", "from libsection.pytensor import ExternalCOp")
    assert migrated.count("\n") == python.count("\n") + 1
    (tmp_path / "vectorTimesVector.c").write_text(c_code)
    module_file = tmp_path / "tutorial_op.py"
    module_file.write_text(migrated)
    spec = importlib.util.spec_from_file_location(f"tutorial_op_{mode}", module_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as `import tutorial_op` would: the class finds its file
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no FutureWarning, no fallback warning
        spec.loader.exec_module(module)
        op = module.VectorTimesVector()
        x, y = pt.dvector(), pt.dvector()
        f = pytensor.function([x, y], op(x, y), mode=mode)
        a, b = np.arange(5.0), np.linspace(1, 2, 5)
        np.testing.assert_allclose(f(a, b), a * b)
        np.testing.assert_allclose(f(a[::2], b[::2]), a[::2] * b[::2])
        with pytest.raises(ValueError, match=re.escape("Shape mismatch")):
            f(a, b[:3])


@pytest.mark.parametrize("mode", ["CVM", "FAST_COMPILE", "NUMBA"])
def test_pytensor_functions_with_these_ops_pickle(mode, cache_dir):
    example = next(e for e in EXAMPLES if e.folder == "scale_shift")
    x = pt.vector(dtype="float64")
    f = pytensor.function([x], pytensor_op(example.op())(x), mode=mode)
    g = pickle.loads(pickle.dumps(f))
    values = example.inputs()
    np.testing.assert_allclose(g(*values), example.expected(*values))
