"""PyTensor's own DimShuffle moved onto libsection by changing its one import.

In PyTensor 3.0 DimShuffle is an ExternalCOp: `c_code/dimshuffle.c` with a ParamsType of an lvector
and an int64, `check_input = False` and a view of its input as output. The installed PyTensor's
class source is executed again in its own module's namespace with `ExternalCOp` bound to
libsection's, which is the migration the README promises, on an op PyTensor itself relies on. The
rebased class is not a subclass of PyTensor's DimShuffle, so no rewrite replaces it: the graph
runs its C file. PyTensor 3.1 rewrote DimShuffle as a plain COp; there, this module is skipped
(the Python 3.11 stack pins PyTensor 3.0 and runs it).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt
from pytensor.link.c.op import ExternalCOp as PyTensorExternalCOp
from pytensor.tensor import elemwise

import libsection.pytensor

if not issubclass(elemwise.DimShuffle, PyTensorExternalCOp):
    pytest.skip(
        f"PyTensor {pytensor.__version__}'s DimShuffle is not an ExternalCOp",
        allow_module_level=True,
    )

MODES = ["CVM", "FAST_COMPILE", "NUMBA"]

# (input shape, new_order): each kind the C file handles: transpose, expand, drop, identity, 0-d.
CASES = [
    ((2, 3), (1, 0)),
    ((2, 3), (0, "x", 1)),
    ((2, 3), (1, "x", 0)),
    ((4,), ("x", 0)),
    ((4,), (0, "x")),
    ((2, 1, 3), (0, 2)),
    ((2, 3, 4), (2, 0, 1)),
    ((2, 3), (0, 1)),
    ((), ("x",)),
    ((), ()),
]


@pytest.fixture(scope="module")
def DimShuffle():
    """PyTensor's DimShuffle class, its source executed with libsection's ExternalCOp."""
    namespace = dict(vars(elemwise))  # the module's own imports and names, __name__ included
    namespace["ExternalCOp"] = libsection.pytensor.ExternalCOp
    source = inspect.getsource(elemwise.DimShuffle)
    exec(compile(source, elemwise.__file__, "exec"), namespace)
    rebased = namespace["DimShuffle"]
    assert issubclass(rebased, libsection.pytensor.ExternalCOp)
    assert not issubclass(rebased, PyTensorExternalCOp)
    return rebased


def compile_graph(op, shape, mode):
    x = pt.tensor("x", dtype="float64", shape=(None,) * len(shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        # `* 1.0` makes the view an input of another node, as in any real graph
        return pytensor.function([x], op(x) * 1.0, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("shape", "new_order"), CASES)
def test_the_rebased_dimshuffle_gives_pytensors_results(
    DimShuffle, shape, new_order, mode, cache_dir
):
    value = np.arange(float(np.prod(shape))).reshape(shape)
    ours = DimShuffle(input_ndim=len(shape), new_order=new_order)
    theirs = elemwise.DimShuffle(input_ndim=len(shape), new_order=new_order)
    expected = compile_graph(theirs, shape, "CVM")(value)
    got = compile_graph(ours, shape, mode)(value)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    # A non-contiguous input: the C file reads its strides.
    if value.ndim:
        strided = np.asfortranarray(value)
        np.testing.assert_array_equal(compile_graph(ours, shape, mode)(strided), expected)


def test_in_cvm_the_c_file_runs_natively_and_returns_a_view(DimShuffle, cache_dir):
    op = DimShuffle(input_ndim=2, new_order=(1, "x", 0))
    x = pt.dmatrix("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        f = pytensor.function([x], op(x), mode="CVM")
    nodes = f.maker.fgraph.toposort()
    (ours,) = [i for i, node in enumerate(nodes) if node.op == op]
    # libsection's linker built it (PyTensor's CLinker gives a `_CThunk`), and the VM calls it
    # without Python.
    thunk = f.vm.thunks[ours]
    assert type(thunk.cthunk).__name__ == "PyCapsule"
    assert thunk.__module__ == "libsection._node"
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(f(value), value.T[:, None, :])
    # The output is a view of the input: PyTensor copies it before returning it (a DeepCopyOp
    # after our node), which it does only because the op's view_map says so.
    assert any(type(node.op).__name__ == "DeepCopyOp" for node in nodes)


def test_a_wrong_input_is_refused_as_pytensor_refuses_it(DimShuffle):
    ours = DimShuffle(input_ndim=2, new_order=(1, 0))
    theirs = elemwise.DimShuffle(input_ndim=2, new_order=(1, 0))
    messages = []
    for op in (ours, theirs):
        with pytest.raises(TypeError) as error:
            op(pt.dvector())
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    assert "Expected 2, got 1" in messages[0]
