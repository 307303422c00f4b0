"""pytensor_op: a standalone op inside PyTensor graphs keeps its gradient and static shapes."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
from pathlib import Path

import pytensor.tensor as pt
from vector_times_vector import op as vtv_module
from vector_times_vector.op import VectorTimesVector

from libsection.pytensor import pytensor_op


class WithGradient(VectorTimesVector):
    """z = x * y, with its gradient and shape in PyTensor's terms."""

    # Relative paths resolve against the subclass's file, as in PyTensor.
    func_files = [Path(vtv_module.__file__).parent / "vectorTimesVector.c"]

    def grad(self, inputs, output_grads):
        x, y = inputs
        (g,) = output_grads
        return [g * y, g * x]

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]


class WithPullback(VectorTimesVector):
    """The same gradient under PyTensor 3's name."""

    func_files = WithGradient.func_files

    def pullback(self, inputs, outputs, cotangents):
        x, y = inputs
        (g,) = cotangents
        return [g * y, g * x]


@pytest.mark.parametrize("cls", [WithGradient, WithPullback])
@pytest.mark.parametrize("mode", ["CVM", "FAST_COMPILE", "NUMBA"])
def test_the_standalone_gradient_is_forwarded(mode, cls, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    z = pytensor_op(cls())(x, y)
    gx, gy = pytensor.grad(z.sum(), [x, y])
    f = pytensor.function([x, y], [z, gx, gy], mode=mode)
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    for got, expected in zip(f(a, b), (a * b, b, a), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_an_op_without_a_gradient_gets_one_derived_from_its_code(cache_dir):
    # No pullback or grad of its own: the bridge asks for the one derived from its C code
    # (libsection._gradient; its refusals are tested in test_gradient_refusals.py).
    x, y = pt.dvector("x"), pt.dvector("y")
    z = pytensor_op(VectorTimesVector())(x, y)
    f = pytensor.function([x, y], pytensor.grad(z.sum(), x), mode="CVM")
    b = np.array([4.0, 5.0, 6.0])
    np.testing.assert_array_equal(f(np.array([1.0, 2.0, 3.0]), b), b)


def test_static_shapes_come_from_infer_shape():
    x = pt.tensor("x", dtype="float64", shape=(3,))
    y = pt.tensor("y", dtype="float64", shape=(3,))
    assert pytensor_op(WithGradient())(x, y).type.shape == (3,)
    assert pytensor_op(WithGradient())(pt.dvector(), pt.dvector()).type.shape == (None,)
    # Without infer_shape nothing is claimed.
    assert pytensor_op(VectorTimesVector())(x, y).type.shape == (None,)


class NewStyleShape(VectorTimesVector):
    """infer_shape in PyTensor 3.3's convention, (node, shapes)."""

    func_files = WithGradient.func_files

    def infer_shape(self, node, input_shapes):
        return [input_shapes[1]]


def test_infer_shape_in_either_convention_gives_static_shapes():
    x = pt.tensor("x", dtype="float64", shape=(3,))
    assert pytensor_op(NewStyleShape())(x, x).type.shape == (3,)


@pytest.mark.parametrize("cls", [WithGradient, NewStyleShape])
def test_infer_shape_is_forwarded_to_the_graph(cls, cache_dir):
    x, y = pt.dvector("x"), pt.dvector("y")
    z = pytensor_op(cls())(x, y)
    f = pytensor.function([x, y], z.shape, mode="FAST_RUN")
    # The shape is computed without running the op: the graph holds no apply of it.
    assert not any(type(n.op).__name__ == cls.__name__ for n in f.maker.fgraph.apply_nodes)
    assert tuple(f(np.ones(4), np.ones(4))) == (4,)
