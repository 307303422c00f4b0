"""A drop-in node reaches its module by the route ``build()``'s ops take: its sections are
expanded by the linker core in C++, with the same checks, and Python is asked only for the
``c_*`` methods its class overrides. The module it gets is the one the op's Python methods
describe, byte for byte."""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.scalar as ps
import pytensor.tensor as pt
from dropin_ops import OURS
from examples import load_op_module
from pytensor.graph.basic import Apply
from pytensor.tensor import as_tensor_variable

from libsection import _node
from libsection.pytensor import ExternalCOp, pytensor_op


def python_calls(action):
    """The names of the Python functions entered while ``action`` runs, and its result."""
    calls: list[str] = []

    def profile(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        result = action()
    finally:
        sys.setprofile(None)
    return calls, result


def example(folder: str, cls: str, *args):
    """An example op of ops/, as a PyTensor op through ``pytensor_op``."""
    return pytensor_op(getattr(load_op_module(folder), cls)(*args))


def nodes():
    """One node of each drop-in test op, and of example ops with scalar inputs and params."""
    v, w = pt.dvector(), pt.dvector()
    return {
        "Counter": OURS["Counter"]()(v).owner,
        "Helper": OURS["Helper"]()(v).owner,
        "MaybeAdd": OURS["MaybeAdd"](skip_y=False)(v, w).owner,
        "MaybeAddNull": OURS["MaybeAdd"](skip_y=True)(v, w).owner,
        "Combine": OURS["Combine"]("mul")(v, w).owner,
        "Quadratic": OURS["Quadratic"](1.0, 2.0, None)(v).owner,
        "Scale0d": OURS["Scale0d"]()(v, pt.dscalar()).owner,
        "Shift": OURS["Shift"]()(v).owner,
        "VectorTimesVector": example("vector_times_vector", "VectorTimesVector")(v, w).owner,
        "VectorTimesScalar": example("vector_times_scalar", "VectorTimesScalar")(
            v, pt.dscalar()
        ).owner,
        "ScaleShift": example("scale_shift", "ScaleShift", 3.0, -1.0)(v).owner,
    }


def test_a_node_without_overrides_makes_no_call_into_python_while_its_module_is_generated(
    cache_dir,
):
    node = OURS["Counter"]()(pt.dvector()).owner
    graph, _ = _node._node_graph(node)
    calls, text = python_calls(graph.source)
    assert calls == []
    assert "APPLY_SPECIFIC(count)" in text
    # and the module it makes runs
    assert int(_node.compile_node(node)(np.ones(3))) == 0


def test_only_the_overridden_methods_are_asked_of_python(cache_dir):
    class Extra(OURS["Counter"]):
        def c_support_code_apply(self, node, name):
            return super().c_support_code_apply(node, name) + "\n/* added in Python */\n"

    graph, _ = _node._node_graph(Extra()(pt.dvector()).owner)
    calls, text = python_calls(graph.source)
    assert {c for c in calls if c.startswith("c_")} == {"c_support_code_apply"}
    assert "/* added in Python */" in text


def test_an_op_that_reshapes_every_string_is_asked_only_for_that(cache_dir):
    node = OURS["Shift"]()(pt.dvector()).owner  # its own get_c_macros
    graph, _ = _node._node_graph(node)
    calls, text = python_calls(graph.source)
    assert "get_c_macros" in calls
    assert not {c for c in calls if c.startswith("c_")}  # the sections are expanded in C++
    assert "#define SHIFT 5" in text
    node = OURS["MaybeAdd"]()(pt.dvector(), pt.dvector()).owner  # its format_c_function_args
    graph, _ = _node._node_graph(node)
    calls, text = python_calls(graph.source)
    assert "format_c_function_args" in calls
    assert not {c for c in calls if c.startswith("c_")}
    assert "APPLY_SPECIFIC(maybe_add)(V1, NULL, &" in text


@pytest.mark.parametrize("name", sorted(nodes()))
def test_both_routes_generate_the_same_module(name, monkeypatch, cache_dir):
    node = nodes()[name]
    ours, _ = _node._node_graph(node)
    monkeypatch.setattr(_node, "_node_op", lambda op, node: _node.COpAdapter(op, node))
    theirs, _ = _node._node_graph(node)
    assert ours.source() == theirs.source()


def test_the_route_of_a_drop_in_node_runs_the_checks_of_build(cache_dir):
    # The tutorial's main function takes two arrays; build() refuses a scalar for one by name.
    class Tutorial(ExternalCOp):
        __props__ = ()

        def __init__(self):
            op_dir = load_op_module("vector_times_vector").__file__
            super().__init__(
                str(op_dir).replace("op.py", "vectorTimesVector.c"),
                "APPLY_SPECIFIC(vector_times_vector)",
            )

        def make_node(self, x, y):
            return Apply(self, [x, y], [pt.dvector()])

    node = Tutorial()(pt.dvector(), ps.float64()).owner
    with pytest.raises(TypeError, match=r"Tutorial input 1: expected an array .*got a scalar"):
        _node.compile_node(node)


def test_expansion_errors_raise_what_the_drop_in_methods_raise(tmp_path, cache_dir):
    source = tmp_path / "no_code.c"
    source.write_text("#section support_code\nstatic int unused;\n")

    class NoCode(ExternalCOp):
        __props__ = ()

        def make_node(self, x):
            return Apply(self, [as_tensor_variable(x)], [pt.dvector()])

    node = NoCode(str(source))(pt.dvector()).owner
    with pytest.raises(NotImplementedError, match="NoCode has no `code` section and no func_name"):
        _node.compile_node(node)


# A drop-in op with an expansion error, in each way the drop-in's methods report one.
_BAD_OPS = {
    "no code": ("#section support_code\nstatic int unused;\n", None, None),
    "a code section and a func_name": (
        "#section support_code_apply\n"
        "int APPLY_SPECIFIC(f)(PyArrayObject* x, PyArrayObject** z) { return 0; }\n"
        "#section code\n/* unused */\n",
        "APPLY_SPECIFIC(f)",
        None,
    ),
}


def _reshaping(name: str):
    """An override of one of the methods that reshape every string, giving what it gives."""
    if name == "get_c_macros":
        return lambda self, node, n, check_input=None: ExternalCOp.get_c_macros(
            self, node, n, check_input
        )
    return lambda self, inp, out: ExternalCOp.format_c_function_args(self, inp, out)


@pytest.mark.parametrize("override", ["", "get_c_macros", "format_c_function_args"])
@pytest.mark.parametrize("bad", sorted(_BAD_OPS))
def test_an_expansion_error_is_the_same_on_every_route(bad, override, tmp_path, cache_dir):
    """The linker core (every mode's route, also for an op that reshapes every string) and
    PyTensor's own CLinker (the op's c_* methods) raise one class with one message."""
    text, func_name, num_inputs = _BAD_OPS[bad]
    source = tmp_path / "bad.c"
    source.write_text(text)
    body = {
        "__props__": (),
        "_cop_num_inputs": num_inputs,
        "make_node": lambda self, *xs: Apply(self, list(xs), [pt.dvector()]),
    }
    if override:
        body[override] = _reshaping(override)
    inputs = [pt.dvector()]
    node = type("Bad", (ExternalCOp,), body)(str(source), func_name)(*inputs).owner

    def raised(action):
        with pytest.raises(Exception) as caught:
            action()
        return type(caught.value), str(caught.value)

    linker = raised(lambda: _node.compile_node(node))
    names = [f"x{i}" for i in range(len(inputs))]
    clinker = raised(lambda: node.op.c_code(node, "n", names, ["z"], {"fail": "fail;"}))
    assert linker == clinker
    assert linker[0] in (ValueError, AssertionError, NotImplementedError)
