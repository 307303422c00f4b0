"""The edges of batches (issue 49): a standalone op's gufunc signature checked on every call,
with or without batch dimensions, as NumPy's gufuncs check theirs; an op on 0-d arrays or on
numbers vectorized in every mode; and a `perform` stub recognised as one."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent

# ---------------------------------------------------------------- the signature, on every call

# Each call in a process of its own: today some crash it (SIGSEGV) or read past an array.
CALL = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from batched_ops import AddRows
x, y = (np.array(v, dtype=float) for v in json.loads(sys.argv[2]))
try:
    print(json.dumps({"value": AddRows()(x, y).tolist()}))
except ValueError as e:
    print(json.dumps({"ValueError": str(e)}))
"""


def call_add_rows(x, y, cache_dir):
    run = subprocess.run(
        [sys.executable, "-c", CALL, str(TESTS), json.dumps([x, y])],
        capture_output=True,
        text=True,
        timeout=300,
        env={"LIBSECTION_CACHE_DIR": str(cache_dir), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, f"the call ended with status {run.returncode}: {run.stderr}"
    return json.loads(run.stdout)


# NumPy's gufuncs refuse each of these (`np.vectorize(..., signature=...)` too); the messages are
# those a batch gets today.
MISMATCH = r"AddRows: core dimension n is 4 in input 0 but 1 in input 1"
WRONG = {
    "0-d y, no batch": ([1.0, 2.0, 3.0, 4.0], 2.0, r"AddRows: input 1 has 0 dimensions; its core"),
    "n is 4 and 1, no batch": ([1.0, 2.0, 3.0, 4.0], [2.0], MISMATCH),
    "n is 4 and 1, in a batch": ([[1.0, 2.0, 3.0, 4.0]] * 2, [[2.0]] * 2, MISMATCH),
}


@pytest.mark.parametrize("case", WRONG, ids=str)
def test_a_call_against_the_gufunc_signature_is_a_value_error(case, tmp_path):
    x, y, message = WRONG[case]
    said = call_add_rows(x, y, tmp_path / "cache")
    assert "ValueError" in said, f"{case}: {said}"
    assert re.search(message, said["ValueError"]), said["ValueError"]


def test_calls_the_signature_allows_still_run(tmp_path):
    x = [1.0, 2.0, 3.0, 4.0]
    assert call_add_rows(x, x, tmp_path / "cache") == {"value": [2.0, 4.0, 6.0, 8.0]}
    assert call_add_rows([x, x], x, tmp_path / "cache") == {"value": [[2.0, 4.0, 6.0, 8.0]] * 2}


def test_one_row_gives_what_a_single_call_gives(cache_dir):
    """Without batch dimensions the op runs as a batch of one row (the signature checked):
    its arrays are its own, a 0-d array stays one, a scalar output is a number."""
    from batched_ops import RowSum, ScaleRow

    total = RowSum()(np.arange(4.0))
    assert type(total) is np.float64 and total == 6.0, repr(total)
    np.testing.assert_array_equal(RowSum()(np.arange(6.0).reshape(2, 3)), [3.0, 12.0])
    np.testing.assert_array_equal(ScaleRow()(np.arange(3.0), np.array(2.0)), [0.0, 2.0, 4.0])


FAILING_FIRST_ROW = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from batched_ops import CheckedLogUnnamed
for x in ([1.0, -1.0], [[1.0, -1.0]]):  # one row, then a batch whose first row fails
    try:
        CheckedLogUnnamed()(np.array(x))
    except ValueError as e:
        print(e)
"""


def test_a_row_that_fails_before_making_its_output_is_its_error(cache_dir):
    """An output left to the first row has no view; the row's failure is the op's error."""
    run = subprocess.run(
        [sys.executable, "-c", FAILING_FIRST_ROW, str(TESTS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"the calls ended with status {run.returncode}: {run.stderr}"
    said = run.stdout.splitlines()
    assert said == [
        "checked_log: x[1] = -1 is not positive; log is undefined there",
        "CheckedLogUnnamed: row 0 of the batch (index (0,)): checked_log: x[1] = -1 is not "
        "positive; log is undefined there",
    ], said


# ---------------------------------------------------------------- a 0-d op under pt.vectorize

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt  # noqa: E402
from batched_ops import Divmod0d  # noqa: E402
from pytensor.tensor.blockwise import Blockwise  # noqa: E402

from libsection.pytensor import ExternalCOp, pytensor_op  # noqa: E402


@pytest.mark.parametrize("mode", ["CVM", "NUMBA", "FAST_COMPILE"])
def test_a_0d_op_vectorizes_in_every_mode(mode, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    q, r = pt.vectorize(pytensor_op(Divmod0d()), signature="(),()->(),()")(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        f = pytensor.function([x, y], [q, r], mode=mode)
    a, b = np.array([7.0, -7.0, 5.5]), np.array([2.0, 2.0, 0.5])
    nodes = f.maker.fgraph.toposort()
    assert not [n for n in nodes if isinstance(n.op, Blockwise)], nodes  # one C loop
    got_q, got_r = f(a, b)
    np.testing.assert_array_equal(got_q, np.floor(a / b))
    np.testing.assert_array_equal(got_r, a - b * np.floor(a / b))


@pytest.mark.parametrize("mode", ["CVM", "NUMBA", "FAST_COMPILE"])
def test_an_op_on_numbers_vectorizes_per_element_in_every_mode(mode, cache_dir):
    """Its node takes PyTensor scalars, which no batch entry takes: Blockwise runs it."""
    from batched_ops import TwiceNumber

    x = pt.dvector("x")
    z = pt.vectorize(pytensor_op(TwiceNumber()), signature="()->()")(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        f = pytensor.function([x], z, mode=mode)
    np.testing.assert_array_equal(f(np.array([7.0, -7.0, 5.5])), [14.0, -14.0, 11.0])


# ---------------------------------------------------------------- the README's perform stub


class WithPerformStub(ExternalCOp):
    """A C-only drop-in op with the stub PyTensor's abstract `perform` makes authors write."""

    __props__ = ()

    def __init__(self):
        super().__init__(
            str(TESTS / "data" / "batched" / "plus_ndim.c"), "APPLY_SPECIFIC(plus_ndim)"
        )

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return pytensor.graph.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        raise NotImplementedError("runs only in C")


def test_a_perform_that_only_raises_is_batched_in_one_c_loop(cache_dir):
    x = pt.dmatrix("x")
    z = pt.vectorize(WithPerformStub(), signature="(n)->(n)")(x)
    f = pytensor.function([x], z, mode="CVM")
    ops = [node.op for node in f.maker.fgraph.toposort()]
    assert not [op for op in ops if type(op) is Blockwise], ops  # libsection's batch, not a loop
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(f(value), value + 1)  # each row is a vector (ndim 1)
