"""What a derived gradient refuses, and where it says so: values hidden behind a plain `double`
(a cast of an array's data, refused where the gradient is asked for; a variable, refused by the
gradient's compile at its line), C's implicit `void*` conversion in an op declared C (its
gradient's module is C++), code given by Python overrides, values copied as plain doubles
(refused when the gradient or the forward-mode product runs). And what it leaves alone: the op's
own module, built before any gradient is asked for, and the same after.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.gradient import NullTypeGradError

import libsection
from libsection.pytensor import pytensor_op

DATA = Path(__file__).resolve().parent / "data" / "gradient"
sys.path.insert(0, str(DATA))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "ops"))
from gradient_ops import (  # noqa: E402
    CSumSquares,
    GridDot,
    HeldElement,
    HeldInDouble,
    HiddenCast,
    MemcpySquare,
    MemcpyTotal,
    PythonCode,
    WeightedLogSumExpC,
    WeightedLogSumExpHand,
    forward_product,
)

pytestmark = pytest.mark.usefixtures("cache_dir")

X = np.array([0.5, -1.0, 2.0])
T = np.array([0.0, 0.5, 1.0])


def test_a_cast_hiding_a_differentiated_input_is_refused_at_its_line():
    x, t = pt.dvector("x"), pt.dvector("t")
    out = HiddenCast()(x, t)
    # The op itself runs.
    assert pytensor.function([x, t], out, mode="CVM")(X, T) == pytest.approx(X @ T)
    # x's gradient is refused where it is asked for, saying where and what to write.
    with pytest.raises(NullTypeGradError) as refused:
        pt.grad(out, x)
    message = str(refused.value)
    assert "hidden_cast.c:7:18: error: `PyArray_DATA(x)` is read as plain `double`" in message
    assert "write `DTYPE_INPUT_0` in place of `double`" in message
    assert "hidden_cast.c:8" not in message  # t's cast is fine while t is not differentiated
    # t's gradient is refused likewise (its data is read as double); with t a constant, x's is
    # still refused.
    with pytest.raises(NullTypeGradError, match=r"hidden_cast.c:8:18"):
        pt.grad(out, t)
    with pytest.raises(NullTypeGradError, match=r"hidden_cast.c:7:18"):
        pt.grad(HiddenCast()(x, T), x)


@pytest.mark.parametrize("mode", ["CVM", "FAST_COMPILE"])
def test_a_plain_array_read_as_double_is_fine_while_it_carries_no_derivative(mode):
    x, t = pt.dvector("x"), pt.dvector("t")
    # t a constant, or an input whose gradient the function does not ask for.
    for grid, inputs, args in ((T, [x], (X,)), (t, [x, t], (X, T))):
        g = pt.grad(GridDot()(x, grid), x)
        np.testing.assert_allclose(pytensor.function(inputs, g, mode=mode)(*args), T, rtol=1e-15)
    with pytest.raises(NullTypeGradError, match=r"grid_dot.c:7:24.*DTYPE_INPUT_1"):
        pt.grad(GridDot()(x, t), t)


def test_a_value_held_in_a_double_is_told_at_its_line_when_the_gradient_compiles():
    x = pt.dvector("x")
    out = HeldInDouble()(x)
    assert pytensor.function([x], out, mode="CVM")(X) == pytest.approx(X @ X)
    g = pt.grad(out, x)  # the cast-free files pass: the compiler finds the double
    with pytest.raises(libsection.CompileError) as failed:
        pytensor.function([x], g, mode="CVM")
    message = str(failed.value)
    # Once, though the compile has the op's code twice (on dual and on taped numbers).
    assert message.count("held_in_double.c:10:15: error:") == 1, message
    assert message.count("held_in_double.c:10:15: note:") == 1, message
    assert "libsection derives this op's gradient by running its C code on dual numbers" in message
    assert "`DTYPE_OUTPUT_0 total = 0;`, not `double total`" in message


def test_an_element_read_into_a_double_is_told_once_with_its_macro():
    x = pt.dvector("x")
    out = HeldElement()(x)
    assert pytensor.function([x], out, mode="CVM")(X) == pytest.approx(X @ X)
    with pytest.raises(libsection.CompileError) as failed:
        pytensor.function([x], pt.grad(out, x), mode="CVM")
    message = str(failed.value)
    assert message.count("held_element.c:9:20: error:") == 1, message
    assert message.count("held_element.c:9:20: note:") == 1, message
    assert "write `DTYPE_INPUT_0` in place of `double`" in message
    assert len([d for d in failed.value.diagnostics if d.severity == "error"]) == 1


@pytest.mark.parametrize("mode", ["CVM", "NUMBA"])
def test_values_copied_as_plain_doubles_are_refused_when_the_gradient_runs(mode):
    # memcpy of n * sizeof(double) passes every static check; on dual numbers it copies a
    # fraction of the elements. Each pass's values are checked against the op's own.
    x = pt.dvector("x")
    out = MemcpySquare()(x)
    np.testing.assert_array_equal(pytensor.function([x], out, mode=mode)(X), X * X)
    f = pytensor.function([x], pt.grad(out.sum(), x), mode=mode)
    with pytest.raises(ValueError) as refused:
        f(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    _refused_as_hidden(str(refused.value), "MemcpySquare", 0)


def _refused_as_hidden(message: str, op: str, output: int) -> None:
    assert f"{op} output {output}: its gradient is derived by running its C code" in message
    assert "where the op's own module computes" in message
    assert "n * sizeof(DTYPE_INPUT_0)" in message


@pytest.mark.parametrize("mode", ["CVM", "NUMBA"])
def test_values_copied_as_plain_doubles_are_refused_in_forward_mode(mode):
    # The forward-mode product's pass is checked as a gradient's: pushforward (R_op), and the
    # gradient of a pullback in its cotangent (a pushforward), for an array and a number.
    x, u, v = pt.dvector("x"), pt.dvector("u"), pt.dvector("v")
    square, total = MemcpySquare()(x), MemcpyTotal()(x)
    xv = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert pytensor.function([x], total, mode=mode)(xv) == pytest.approx(xv @ xv)
    products = (
        ("MemcpySquare", [x, v], forward_product(square, x, v)),
        ("MemcpyTotal", [x, v], forward_product(total, x, v)),
        ("MemcpySquare", [x, u, v], pt.grad(pt.dot(pt.grad(pt.dot(square, u), x), v), u)),
    )
    for op, inputs, product in products:
        f = pytensor.function(inputs, product, mode=mode)
        ran = [type(n.op).__name__ for n in f.maker.fgraph.toposort()]
        assert "DerivedPushforward" in ran and "DerivedGradient" not in ran
        with pytest.raises(ValueError) as refused:
            f(*[xv] * len(inputs))
        _refused_as_hidden(str(refused.value), op, 0)


def test_values_copied_as_plain_doubles_are_refused_by_jax_jvp():
    # Under jit, JAX's jvp runs the derived pushforward alone (the gradient's pass is dropped).
    jax = pytest.importorskip("jax", reason="JAX is installed on the py312 stack only")
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    x = pt.tensor("x", dtype="float64", shape=(5,))
    fgraph = FunctionGraph([x], [MemcpySquare()(x)], clone=True)
    get_mode("JAX").optimizer(fgraph)
    fn = jax_funcify(fgraph)
    jvp = jax.jit(lambda a, t: jax.jvp(lambda b: fn(b)[0], (a,), (t,))[1])
    xv = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    with pytest.raises(jax.errors.JaxRuntimeError) as refused:
        np.asarray(jvp(xv, xv))
    assert "ValueError in MemcpySquare.pushforward" in str(refused.value)  # the op, not its class
    _refused_as_hidden(str(refused.value), "MemcpySquare", 0)


def test_an_op_declared_c_is_differentiated_as_cxx():
    x, w = pt.dvector("x"), pt.dvector("w")
    wv = np.array([1.0, 2.0, 0.5])
    got = pytensor.function([x, w], pt.grad(WeightedLogSumExpC()(x, w), [x, w]), mode="CVM")
    expected = pytensor.function([x, w], pt.grad(WeightedLogSumExpHand()(x, w), [x, w]), mode="CVM")
    for g, e in zip(got(X, wv), expected(X, wv), strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_cs_implicit_void_pointer_is_told_as_the_cast_to_write():
    x = pt.dvector("x")
    out = CSumSquares()(x)
    assert pytensor.function([x], out, mode="CVM")(X) == pytest.approx(X @ X)
    with pytest.raises(libsection.CompileError) as failed:
        pytensor.function([x], pt.grad(out, x), mode="CVM")
    message = str(failed.value)
    assert "c_sum_squares.c:7:" in message
    assert "C++ converts `void*` to another pointer type only with a cast" in message


def test_code_given_by_python_cannot_be_differentiated():
    x, w = pt.dvector("x"), pt.dvector("w")
    with pytest.raises(NotImplementedError, match="overrides c_code in Python"):
        pt.grad(PythonCode()(x, w), x)


def test_the_ops_own_module_is_built_alone_and_does_not_change(cache_dir):
    # A fresh process: this one's memo of loaded modules may already hold the op's module (built
    # by another test), and would then write nothing to this test's cache.
    script = f"""
import sys
import numpy as np, pytensor, pytensor.tensor as pt
sys.path.insert(0, {str(DATA)!r})
from gradient_ops import WeightedLogSumExp
from libsection.pytensor import compile_node
entries = {str(cache_dir / "entries")!r}
import os
X = np.array({X.tolist()!r})
x, w = pt.dvector("x"), pt.dvector("w")
out = WeightedLogSumExp()(x, w)
pytensor.function([x, w], out, mode="CVM")(X, X)
print(len(os.listdir(entries)))  # no gradient module before one is asked for
key = compile_node(out.owner).info["key"]
pytensor.function([x, w], pt.grad(out, x), mode="CVM")(X, X)
print(len(os.listdir(entries)))  # the gradient's modules (the pullback, the values' taped pass)
info = compile_node(out.owner).info
print(info["key"] == key, info["compiled"])
"""
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1", "3", "True", "False"]


# The example ops of ops/: those written with their DTYPE macros are differentiated; those that
# read or keep values as plain `double` are refused, each at its line.
DIFFERENTIATED_EXAMPLES = [
    "vector_times_vector",
    "vector_times_scalar",
    "sum_and_difference",
    "scale_shift",
    "square",
]


def _example(folder):
    from examples import EXAMPLES

    (example,) = [e for e in EXAMPLES if e.folder == folder]
    return example


@pytest.mark.parametrize("folder", DIFFERENTIATED_EXAMPLES)
def test_example_ops_written_with_dtype_macros_are_differentiated(folder):
    example = _example(folder)
    op = pytensor_op(example.op())
    values = [np.asarray(v, dtype="float64") for v in example.inputs()]
    variables = [pt.tensor(f"v{i}", dtype="float64", shape=v.shape) for i, v in enumerate(values)]
    outs = op(*variables)
    outs = outs if isinstance(outs, list) else [outs]
    shapes = [np.shape(r) for r in _as_list(example.expected(*values))]
    probes = [
        np.linspace(1.0 + j, 2.0 + 3 * j, math.prod(s)).reshape(s) for j, s in enumerate(shapes)
    ]
    cost = sum((o * p).sum() for o, p in zip(outs, probes, strict=True))
    grads = pytensor.function(variables, pt.grad(cost, variables), mode="CVM")(*values)

    def reference(args):
        results = _as_list(example.expected(*args))
        return sum((np.asarray(r) * p).sum() for r, p in zip(results, probes, strict=True))

    step = 1e-6
    for i, v in enumerate(values):
        central = np.zeros_like(v)
        for k in np.ndindex(v.shape):
            plus, minus = [u.copy() for u in values], [u.copy() for u in values]
            plus[i][k] += step
            minus[i][k] -= step
            central[k] = (reference(plus) - reference(minus)) / (2 * step)
        np.testing.assert_allclose(grads[i], central, rtol=1e-7, atol=0)
        assert np.all(grads[i] != 0)


@pytest.mark.parametrize(
    ("folder", "error", "where", "why"),
    [
        # values kept in a double (a variable, a scratch buffer): the gradient's compile says so
        ("running_max", libsection.CompileError, "runningMax.c:", "write no `(double)` cast"),
        ("checked_log", libsection.CompileError, "checkedLog.c:14:", "write no `(double)` cast"),
        # elements read through `(double*)`, one of an optional input the call leaves NULL: the
        # linker refuses it where the gradient is asked for
        ("sum_up_to_three", libsection.LinkError, "sumUpToThree.c:20:30", "`PyArray_GETPTR1(w)`"),
    ],
)
def test_example_ops_keeping_values_in_a_double_are_told_what_to_write(folder, error, where, why):
    example = _example(folder)
    values = [np.asarray(v, dtype="float64") for v in example.inputs()]
    variables = [pt.tensor(f"v{i}", dtype="float64", shape=v.shape) for i, v in enumerate(values)]
    out = pytensor_op(example.op())(*variables)
    # The op itself runs.
    np.testing.assert_allclose(
        pytensor.function(variables, out, mode="CVM")(*values), example.expected(*values)
    )
    with pytest.raises(error) as refused:
        pytensor.function(variables, pt.grad(out.sum(), variables), mode="CVM")
    message = str(refused.value)
    assert f"{type(example.op()).__name__}" in message
    assert where in message
    assert why in message


def _as_list(value):
    return list(value) if isinstance(value, tuple) else [value]
