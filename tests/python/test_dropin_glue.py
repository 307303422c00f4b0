"""A drop-in node's PyTensor TensorType variables get their glue from libsection: PyTensor's own
checks, exception types and messages, written once per module in prelude functions instead of
PyTensor's text per variable. Wrong inputs go straight into the C thunks of PyTensor's C backend
and of the drop-in (the function's Python-side filter would refuse most of them first)."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt
from dropin_ops import OURS, THEIRS
from pytensor.tensor.type import TensorType

from libsection._node import _node_graph


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One compile cache for the file: each case runs the same two modules."""
    with pytest.MonkeyPatch.context() as m:
        m.setenv("LIBSECTION_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


def maybe_add(ops, x_type=None):
    x = pt.dvector() if x_type is None else x_type()
    return ops["MaybeAdd"](False)(x, pt.dvector()).owner


def run_c_thunk(node, values, output=None):
    """The node's C thunk run on `values`, its output cell holding `output`: ("ok", its
    output) or (exception class, message)."""
    storage = {v: [None] for v in [*node.inputs, *node.outputs]}
    computed = {v: [False] for v in storage}
    thunk = node.op.make_thunk(node, storage, computed, [], impl="c")
    for variable, value in zip(node.inputs, values, strict=True):
        storage[variable][0] = value
    storage[node.outputs[0]][0] = output
    try:
        thunk()
    except Exception as e:
        return type(e), str(e)
    return "ok", storage[node.outputs[0]][0]


def assert_same(ours, theirs):
    """The same exception class and message, or (PyTensor's glue let the value through and the
    op's code ran on it) the same output."""
    assert ours[0] == theirs[0]
    if theirs[0] == "ok":
        np.testing.assert_array_equal(ours[1], theirs[1])
    else:
        assert ours[1] == theirs[1]


def misaligned(n):
    """A float64 vector whose data starts one byte past an aligned address."""
    raw = np.zeros(n * 8 + 1, dtype=np.uint8)
    a = np.frombuffer(raw.data, dtype=np.float64, count=n, offset=1)
    assert not a.flags.aligned
    return a


y = np.array([10.0, 20.0])
WRONG_INPUTS = {
    "float32": [np.array([1.0, 2.0], dtype=np.float32), y],
    "int64 second input": [np.array([1.0, 2.0]), np.array([1, 2])],
    "2-d": [np.ones((2, 2)), y],
    "a list": [[1.0, 2.0], y],
    "a float": [1.0, y],
    "None": [None, y],
    "None second input": [np.array([1.0, 2.0]), None],
    "misaligned": [misaligned(2), y],
    "misaligned 3-d": [misaligned(8).reshape(2, 2, 2), y],
    "byte-swapped": [np.array([1.0, 2.0], dtype=">f8"), y],
    "non-contiguous": [np.arange(4.0)[::2], y],
}


@pytest.mark.parametrize("case", list(WRONG_INPUTS))
def test_wrong_inputs_fail_as_in_pytensors_c_backend(case, shared_cache):
    values = WRONG_INPUTS[case]
    assert_same(run_c_thunk(maybe_add(OURS), values), run_c_thunk(maybe_add(THEIRS), values))


@pytest.mark.parametrize(
    "output",
    [np.zeros(2), np.zeros(2, np.float32), [0.0, 0.0], misaligned(2)],
    ids=["float64", "float32", "a list", "misaligned"],
)
def test_a_previous_output_is_checked_as_in_pytensors_c_backend(output, shared_cache):
    """The output cell's old value is extracted (the op may reuse it) with the same checks."""
    values = [np.array([1.0, 2.0]), y]
    assert_same(
        run_c_thunk(maybe_add(OURS), values, output), run_c_thunk(maybe_add(THEIRS), values, output)
    )


def test_a_misaligned_output_fails_its_sync_as_in_pytensors_c_backend(shared_cache):
    def node(ops):
        return ops["MisalignedOut"]()(pt.dvector()).owner

    values = [np.array([1.0, 2.0])]
    ours = run_c_thunk(node(OURS), values)
    assert ours[0] is NotImplementedError
    assert ours[1].startswith("c_sync: expected an aligned array, got non-aligned array")
    assert_same(ours, run_c_thunk(node(THEIRS), values))


def test_a_static_shape_is_not_checked_by_the_glue_in_either(shared_cache):
    def static():
        return pt.tensor(dtype="float64", shape=(3,))

    values = [np.array([1.0, 2.0]), y]
    theirs = run_c_thunk(maybe_add(THEIRS, static), values)
    ours = run_c_thunk(maybe_add(OURS, static), values)
    assert theirs[0] == ours[0] == "ok"
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_pytensors_messages_are_the_expected_ones(shared_cache):
    """Not only equal to PyTensor's: these are its messages (a run of the drop-in alone)."""
    node = maybe_add(OURS)
    assert run_c_thunk(node, [None, y]) == (ValueError, "expected an ndarray, not None")
    assert run_c_thunk(node, [[1.0], y]) == (ValueError, "expected an ndarray")
    kind, message = run_c_thunk(node, [np.zeros(2, np.float32), y])
    assert kind is TypeError and re.fullmatch(
        r"expected type_num \d+ \(NPY_FLOAT64\) got \d+", message
    )
    kind, message = run_c_thunk(node, [misaligned(2), y])
    assert kind is NotImplementedError
    assert message.startswith("expected an aligned array of type 12 (NPY_FLOAT64), got non-aligned")


def run_text(node):
    """The module's node table and run(), where each variable's glue is."""
    graph, _ = _node_graph(node)
    text = graph.source()
    return text[text.index("static const libsection_runtime* libsection_rt;") :]


def test_a_tensor_types_glue_is_a_call_of_the_runtime():
    run = run_text(maybe_add(OURS))
    # x, y, and the output (when not None): PyTensor's checks, by the typenum's name
    assert run.count('{3, 12, 0, "NPY_FLOAT64", ""}') == 3
    assert run.count("libsection_rt->extract") == 3
    assert run.count("libsection_rt->store_output(") == 1  # its c_sync
    assert "expected an ndarray" not in run  # PyTensor's text is not pasted per variable


class OwnExtract(TensorType):
    """Overrides a C method: its glue stays the one its methods write."""

    def c_extract(self, name, sub, check_input=True, **kwargs):
        return "/* own extract */\n" + super().c_extract(name, sub, check_input, **kwargs)


class OwnVersion(TensorType):
    def c_code_cache_version(self):
        return (12, *super().c_code_cache_version()[1:])


class Plain(TensorType):
    """A subclass that changes no C method gets libsection's glue too."""


@pytest.mark.parametrize(
    ("cls", "native"), [(OwnExtract, False), (OwnVersion, False), (Plain, True)]
)
def test_only_tensor_types_with_pytensors_own_glue_get_libsections(cls, native):
    run = run_text(maybe_add(OURS, lambda: cls("float64", shape=(None,))()))
    assert run.count("libsection_rt->extract") == (3 if native else 2)
    assert ("/* own extract */" in run) == (cls is OwnExtract)
    assert ("expected an ndarray" in run) == (not native)
