"""Drop-in nodes of one function compiled together: one library for several nodes, each node
still its own cache entry, its own names, statics, macros and initialisation, and each compiled
alone when they cannot share a library."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt
from pytensor.graph.basic import Apply

import libsection._node as node_module
from libsection.pytensor import ExternalCOp

# An op on one float64 vector: `out = x * factor()`, `factor` defined by its support code.
MAIN = """
#section support_code_apply
int APPLY_SPECIFIC(scaled)(PyArrayObject* x, PyArrayObject** out) {
  Py_XDECREF(*out);
  *out = (PyArrayObject*)PyArray_NewLikeArray(x, NPY_ANYORDER, NULL, 0);
  if (!*out) return 1;
  npy_intp n = PyArray_SIZE(x);
  double const* a = (double const*)PyArray_DATA(x);
  double* b = (double*)PyArray_DATA(*out);
  for (npy_intp i = 0; i < n; ++i) b[i] = a[i] * factor();
  return 0;
}
"""


def op_class(tmp_path: Path, name: str, support: str, extra: str = "", shared=(), apply=""):
    """An op of MAIN whose `factor` `support` defines; `shared` files come before its own,
    `apply` starts its support_code_apply section."""
    path = tmp_path / f"{name}.c"
    main = MAIN.replace("#section support_code_apply\n", "#section support_code_apply\n" + apply)
    path.write_text(("#section support_code\n" + support + "\n" if support else "") + main + extra)

    class Op(ExternalCOp):
        __props__ = ()

        def __init__(self):
            super().__init__([*map(str, shared), str(path)], "APPLY_SPECIFIC(scaled)")

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            raise NotImplementedError

    Op.__name__ = Op.__qualname__ = name
    return Op


def manifests(cache_dir: Path) -> list[dict]:
    return [json.loads(m.read_text()) for m in sorted(cache_dir.glob("entries/*/manifest.json"))]


def test_a_functions_nodes_share_one_library_and_keep_their_own_entries(
    tmp_path, cache_dir, monkeypatch
):
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # one compiler process: one library
    # The same helper name, defined differently by each op: each node keeps its own.
    ops = [
        op_class(tmp_path, f"Times{k}", f"double factor(void) {{ return {k}.0; }}")()
        for k in (2, 3, 5)
    ]
    x = pt.dvector("x")
    f = pytensor.function([x], [op(x) for op in ops], mode="CVM")
    a = np.arange(4.0)
    for got, k in zip(f(a), (2, 3, 5), strict=True):
        np.testing.assert_array_equal(got, a * k)

    written = manifests(cache_dir)
    members = [m for m in written if m["graphs"] == 3 and m["key"] != m["library_key"]]
    (library,) = [m for m in written if m["graphs"] == 3 and m["key"] == m["library_key"]]
    assert sorted(m["graph"] for m in members) == [0, 1, 2]
    assert {m["library_key"] for m in members} == {library["key"]}
    assert sorted(m["ops"][0] for m in members) == ["Times2", "Times3", "Times5"]
    # One file on disk: each entry's library is a name of the library's.
    inodes = {(cache_dir / "entries" / m["key"] / "module.so").stat().st_ino for m in written}
    assert len(inodes) == 1
    assert all(m["sha256"] == library["sha256"] for m in members)

    # section-cache says which library each node's entry belongs to.
    from test_linker_cache import section_cache_tool

    listing = subprocess.run(
        [section_cache_tool(), "--cache-dir", str(cache_dir), "list"],
        text=True,
        capture_output=True,
        timeout=60,
        check=True,
    ).stdout
    assert "the library of 3 graphs compiled together: Times" in listing
    assert listing.count(f"graph 1 of the library {library['key'][:12]}") == 1
    assert listing.count(f"of the library {library['key'][:12]}") == 3

    # A new process (a cleared memo is the same) finds each node's own entry: nothing compiles.
    g = pytensor.function([x], [ops[1](x)], mode="CVM")
    thunk = next(t for t in g.vm.thunks if hasattr(t, "compiled"))
    assert thunk.compiled.info["graphs"] == 3
    assert not thunk.compiled.info["compiled"]
    np.testing.assert_array_equal(g(a)[0], a * 3)


# A file of support code several ops share (each lists it first): a static counter of the calls
# of `counted`. Compiled together, each node must still count its own calls, as in a module of
# its own (PyTensor's CLinker keeps one copy of support code that ops share to the letter).
COUNTER = """#section support_code
static int calls = 0;
static double counted(void) { return (double)calls++; }
"""


def test_compiled_together_each_node_keeps_its_macros_statics_and_initialisation(
    tmp_path, cache_dir
):
    counter = tmp_path / "counter.c"
    counter.write_text(COUNTER)
    # A defines SCALE; B defines it only when it is not: B must still get its own. Each
    # `factor()` adds the calls its node's counter has seen.
    first = op_class(
        tmp_path,
        "First",
        "",
        shared=[counter],
        apply="#define SCALE 2.0\n#define factor() (SCALE + counted())\n",
    )
    second = op_class(
        tmp_path,
        "Second",
        "",
        shared=[counter],
        apply="#ifndef SCALE\n#define SCALE 7.0\n#endif\n#define factor() (SCALE + counted())\n",
    )
    # C's init code fails: only its own node is refused.
    failing = op_class(
        tmp_path,
        "Failing",
        "",
        '\n#section init_code\nPyErr_SetString(PyExc_RuntimeError, "refused in init");\n'
        "return NULL;\n",
        shared=[counter],
        apply="#define factor() (1.0 + 0 * counted())\n",
    )
    x = pt.dvector("x")
    nodes = [op()(x).owner for op in (first, second, failing)]
    node_module.prepare_nodes(nodes, jobs=1)
    assert {m["graphs"] for m in manifests(cache_dir)} == {3}
    a = np.array([1.0, 2.0, 3.0])  # one call of factor() per element
    one, two = node_module.compile_node(nodes[0]), node_module.compile_node(nodes[1])
    np.testing.assert_array_equal(one(a), a * (2 + np.array([0, 1, 2])))
    np.testing.assert_array_equal(two(a), a * (7 + np.array([0, 1, 2])))  # its own count
    np.testing.assert_array_equal(one(a), a * (2 + np.array([3, 4, 5])))
    with pytest.raises(RuntimeError, match="refused in init"):
        node_module.compile_node(nodes[2])
    # Another instance of a node shares its node's statics (one module), and no other's.
    np.testing.assert_array_equal(
        node_module.compile_node(nodes[1])(a), a * (7 + np.array([3, 4, 5]))
    )


def test_nodes_that_cannot_share_a_library_are_compiled_one_by_one(tmp_path, cache_dir, caplog):
    # Two C functions of one name: they clash in any one library (inlined, a whole program
    # could keep both apart; never inlined, both are emitted under one name).
    clash = [
        op_class(
            tmp_path,
            f"Clash{k}",
            f'extern "C" __attribute__((noinline)) double factor(void) {{ return {k}.0; }}',
        )
        for k in (2, 3)
    ]
    # A function declared but defined nowhere in the module (the C library's): in a graph's
    # namespace it would name another symbol, which only loading would find missing.
    declared = op_class(
        tmp_path, "Declared", "double cos(double);\ndouble factor(void) { return cos(0.0) * 4; }"
    )
    plain = op_class(tmp_path, "Plain", "double factor(void) { return 5.0; }")
    x = pt.dvector("x")
    a = np.arange(3.0)
    for ops, expected, why in (
        (clash, [2, 3], "did not compile together; compiling them one by one"),
        ((declared, plain), [4, 5], "leaves libsection_graph_[01]::cos\\(double\\) undefined"),
    ):
        nodes = [op()(x).owner for op in ops]
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="libsection"):
            node_module.prepare_nodes(nodes, jobs=1)
        assert any(re.search(why, r.getMessage()) for r in caplog.records), caplog.text
        for node, k in zip(nodes, expected, strict=True):
            compiled = node_module.compile_node(node)
            assert compiled.info["graphs"] == 1 and not compiled.info["compiled"]
            np.testing.assert_array_equal(compiled(a), a * k)
    assert not list(cache_dir.glob("failed/*"))  # a failed attempt together is no user's error


def test_an_op_and_its_derived_gradient_compile_together(cache_dir, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # one compiler process: one library
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent / "data" / "gradient"))
    from gradient_ops import WeightedLogSumExp, WeightedLogSumExpHand

    x, w = pt.dvector("x"), pt.dvector("w")
    xv, wv = np.linspace(-1.0, 2.0, 5), np.linspace(0.5, 2.0, 5)
    ours, hand = (
        pytensor.function([x, w], [op(x, w), *pt.grad(op(x, w), [x, w])], mode="CVM")
        for op in (WeightedLogSumExp(), WeightedLogSumExpHand())
    )
    for got, expected in zip(ours(xv, wv), hand(xv, wv), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    # The op's values (its taped pass, which the gradient sweeps) and its gradient's module: one
    # library, built before the first thunk.
    written = manifests(cache_dir)
    (library,) = [m for m in written if m["key"] == m["library_key"] and m["graphs"] == 2]
    members = [m for m in written if m.get("library_key") == library["key"] and m is not library]
    assert sorted(m["ops"][0] for m in members) == [
        "WeightedLogSumExp.pullback",
        "WeightedLogSumExp.record",
    ]
    infos = [t.compiled.info for t in ours.vm.thunks if hasattr(t, "compiled")]
    assert len(infos) == 2 and not any(info["compiled"] for info in infos)
