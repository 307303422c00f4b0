"""The drop-in behaves as PyTensor's own ExternalCOp in every mode: differential tests on the
same C files. PyTensor's op runs in CVM (its only C backend); libsection's must give the same
outputs, exception class and message, and struct-state sequence in every mode."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt
from dropin_ops import DATA, OURS, THEIRS, PyTensorCOp, pytensor_base

from libsection.pytensor import ExternalCOp

MODES = ["CVM", "FAST_COMPILE", "NUMBA", "FAST_RUN"]  # FAST_RUN is Numba in PyTensor 3


def function(inputs, outputs, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Numba's object-mode notice for perform
        return pytensor.function(inputs, outputs, mode=mode)


def reference(name, make_graph, *values):
    """PyTensor's own op, in its C backend."""
    inputs, output = make_graph(THEIRS)
    return function(inputs, output, "CVM")(*values)


@pytest.mark.parametrize("mode", MODES)
def test_struct_state_belongs_to_each_compiled_function(mode, cache_dir):
    def graph(ops):
        x = pt.dvector()
        return [x], ops["Counter"]()(x)

    def calls(ops, mode):
        f, g = function(*graph(ops), mode), function(*graph(ops), mode)
        return [int(h(np.ones(2))) for h in (f, f, g, f, g)]

    assert calls(THEIRS, "CVM") == [0, 1, 0, 2, 1]
    assert calls(OURS, mode) == [0, 1, 0, 2, 1]


@pytest.mark.parametrize("mode", MODES)
def test_python_side_c_methods_reach_the_module_in_every_mode(mode, cache_dir):
    def graph(ops):
        x = pt.dvector()
        return [x], ops["Helper"]()(x)

    value = np.array([1.0, -2.0])
    expected = reference("Helper", graph, value)
    np.testing.assert_array_equal(expected, value * 3 * 2 + 1)
    np.testing.assert_array_equal(function(*graph(OURS), mode)(value), expected)


@pytest.mark.parametrize("skip_y", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_an_overridden_format_c_function_args_shapes_the_call(mode, skip_y, cache_dir):
    def graph(ops):
        x, y = pt.dvector(), pt.dvector()
        return [x, y], ops["MaybeAdd"](skip_y)(x, y)

    x, y = np.array([1.0, 2.0]), np.array([10.0, 20.0])
    expected = reference("MaybeAdd", graph, x, y)
    np.testing.assert_array_equal(expected, x + (100 if skip_y else y))
    np.testing.assert_array_equal(function(*graph(OURS), mode)(x, y), expected)


@pytest.mark.parametrize("mode", MODES)
def test_an_overridden_get_c_macros_wraps_the_sections(mode, cache_dir):
    def graph(ops):
        x = pt.dvector()
        return [x], ops["Shift"]()(x)

    x = np.array([1.0, 2.0])
    expected = reference("Shift", graph, x)
    np.testing.assert_array_equal(expected, x + 5)
    np.testing.assert_array_equal(function(*graph(OURS), mode)(x), expected)


@pytest.mark.parametrize("how", ["add", "mul"])
@pytest.mark.parametrize("mode", MODES)
def test_enum_params_run_in_every_mode(mode, how, cache_dir):
    def graph(ops):
        x, y = pt.dvector(), pt.dvector()
        return [x, y], ops["Combine"](how)(x, y)

    x, y = np.array([2.0, 3.0]), np.array([5.0, 7.0])
    expected = reference("Combine", graph, x, y)
    np.testing.assert_array_equal(expected, x + y if how == "add" else x * y)
    np.testing.assert_array_equal(function(*graph(OURS), mode)(x, y), expected)


@pytest.mark.parametrize("mode", MODES)
def test_tensor_scalar_and_generic_params_run_in_every_mode(mode, cache_dir):
    def graph(ops):
        x = pt.dvector()
        return [x], ops["Quadratic"](2.0, -1.0, 0.5)(x)

    x = np.array([0.0, 1.0, 3.0])
    expected = reference("Quadratic", graph, x)
    np.testing.assert_allclose(expected, 2 * x**2 - x + 0.5)
    np.testing.assert_array_equal(function(*graph(OURS), mode)(x), expected)


def zero_d_graph(name):
    def graph(ops):
        x, k = pt.dvector(), pt.dscalar()
        return [x, k], ops[name]()(x, k)

    return graph


@pytest.mark.parametrize("mode", MODES)
def test_0d_tensor_inputs_run_the_c_code_in_every_mode(mode, cache_dir):
    x = np.array([1.0, 2.0])
    expected = reference("Scale0d", zero_d_graph("Scale0d"), x, 3.0)
    np.testing.assert_array_equal(expected, x * 3)
    np.testing.assert_array_equal(function(*zero_d_graph("Scale0d")(OURS), mode)(x, 3.0), expected)


@pytest.mark.parametrize("mode", MODES)
def test_the_c_code_raises_the_same_error_in_every_mode(mode, cache_dir):
    x = np.array([1.0, 2.0])
    with pytest.raises(ValueError) as theirs:
        reference("Scale0d", zero_d_graph("Scale0d"), x, -1.0)
    f = function(*zero_d_graph("Scale0d")(OURS), mode)
    with pytest.raises(type(theirs.value)) as ours:
        f(x, -1.0)
    prefix = "scale_0d: negative factor -1"
    assert str(theirs.value).startswith(prefix) and str(ours.value).startswith(prefix)


@pytest.mark.parametrize("mode", MODES)
def test_an_op_with_its_own_perform_runs_it_outside_the_c_backend(mode, cache_dir):
    x = np.array([1.0, 2.0])
    results = {}
    for label, ops in (("ours", OURS), ("theirs", THEIRS)):
        cls = ops["Scale0dWithPerform"]
        cls.performed = 0
        if label == "theirs" and mode != "CVM":
            f = function(*zero_d_graph("Scale0dWithPerform")(ops), mode)
        else:
            f = function(*zero_d_graph("Scale0dWithPerform")(ops), mode)
        results[label] = (f(x, 2.0), cls.performed)
    np.testing.assert_array_equal(results["ours"][0], results["theirs"][0])
    # CVM runs the C code; every other mode calls the op's own perform, as PyTensor does.
    assert results["ours"][1] == results["theirs"][1] == (0 if mode == "CVM" else 1)


def test_the_class_api_matches_pytensors():
    base = pytensor_base()
    assert ExternalCOp.SECTIONS == base.SECTIONS
    assert ExternalCOp.section_re.pattern == base.section_re.pattern
    assert ExternalCOp.backward_re.pattern == base.backward_re.pattern
    ours, theirs = OURS["MaybeAdd"](False), THEIRS["MaybeAdd"](False)
    for args in ((["V1", "V2"], ["V3"]), (["V1"], ["V3"])):
        assert ours.format_c_function_args(*args) == theirs.format_c_function_args(*args)
    x, y = pt.dvector(), pt.fvector()
    node_ours, node_theirs = ours.make_node(x, y), theirs.make_node(x, y)
    for check_input in (None, True, False):
        assert ours.get_c_macros(node_ours, "node_7", check_input) == theirs.get_c_macros(
            node_theirs, "node_7", check_input
        )


def test_load_c_code_appends_what_loading_all_files_at_once_gives(tmp_path):
    # PyTensor's own load_c_code raises on a second call (its zip over all texts is strict).
    (tmp_path / "a.c").write_text("#section support_code\nint a;\n")
    (tmp_path / "b.c").write_text("#section support_code\nint b;\n#section code\nx;\n")
    op = ExternalCOp(tmp_path / "a.c")
    op.load_c_code([tmp_path / "b.c"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        both = PyTensorCOp([tmp_path / "a.c", tmp_path / "b.c"])
    assert op.code_sections == both.code_sections
    assert op.func_codes == both.func_codes
    # #line directives still name each text's own file.
    assert f'#line 2 "{tmp_path / "b.c"}"\nint b;' in op.c_support_code()


class KernelBase(ExternalCOp):
    """Like Theano's CGpuKernelBase, which adds a `kernels` section."""

    SECTIONS = ExternalCOp.SECTIONS | {"kernels"}


def test_a_base_class_may_add_section_tags():
    kernels = str(DATA / "kernels.c")
    op = KernelBase(kernels)
    assert op.code_sections["kernels"].startswith("\n#kernel k_add")
    assert "kernels_loaded" in op.c_support_code()
    with pytest.raises(
        ValueError, match=re.escape(f"Unknown section type (in file {kernels}): kernels")
    ):
        ExternalCOp(kernels)


def test_a_file_that_is_not_utf8_raises_unicode_decode_error_like_pytensor(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_bytes(b"#section support_code\nint x; /* caf\xe9 */\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(UnicodeDecodeError) as theirs:
            PyTensorCOp(str(bad))
    with pytest.raises(UnicodeDecodeError) as ours:
        ExternalCOp(str(bad))
    assert (ours.value.start, ours.value.reason) == (theirs.value.start, theirs.value.reason)
    assert isinstance(ours.value, ValueError) and "bad.c:2" in str(ours.value)


def test_cvm_builds_the_node_through_libsections_linker_and_calls_it_natively(
    monkeypatch, cache_dir
):
    from pytensor.link.c.basic import CLinker

    def refuse(*args, **kwargs):
        raise AssertionError("PyTensor's CLinker was asked to build a drop-in node")

    monkeypatch.setattr(CLinker, "make_thunk", refuse)
    x = pt.dvector()
    f = function([x], OURS["Counter"]()(x), "CVM")
    assert [int(f(np.ones(1))) for _ in range(3)] == [0, 1, 2]
    (thunk,) = f.vm.thunks
    assert type(thunk.cthunk).__name__ == "PyCapsule"  # the VM calls it without Python


def test_a_c_error_in_cvm_is_the_same_exception_through_the_native_call(cache_dir):
    x, k = pt.dvector(), pt.dscalar()
    f = function([x, k], OURS["Scale0d"]()(x, k), "CVM")
    for _ in range(3):  # the error list is reset after each failure
        with pytest.raises(ValueError, match="scale_0d: negative factor -1"):
            f(np.ones(2), -1.0)
    np.testing.assert_array_equal(f(np.ones(2), 2.0), [2.0, 2.0])


def test_cvm_builds_every_drop_in_node_of_a_function_at_once(monkeypatch, cache_dir):
    import libsection._node as node_module

    prepared = []
    real_core = node_module._core

    class RecordingCore:  # the compiled core, with prepare_together() recorded
        def __getattr__(self, name):
            return getattr(real_core, name)

        def prepare_together(self, graphs):
            prepared.append(len(graphs))
            return real_core.prepare_together(graphs)

    monkeypatch.setattr(node_module, "_core", RecordingCore())
    x, y = pt.dvector(), pt.dvector()
    outputs = [OURS["Helper"]()(x), OURS["MaybeAdd"](False)(x, y), OURS["Combine"]("mul")(x, y)]
    f = function([x, y], outputs, "CVM")
    assert sum(prepared) == 3  # every node, before the first thunk
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    for got, expected in zip(f(a, b), [a * 3 * 2 + 1, a + b, a * b], strict=True):
        np.testing.assert_array_equal(got, expected)
    # Built before the first thunk (together where they could share a library, see
    # test_together.py): nothing was left for the thunks to compile.
    infos = [t.compiled.info for t in f.vm.thunks if hasattr(t, "compiled")]
    assert len(infos) == 3 and not any(info["compiled"] for info in infos)


def test_cvm_generates_each_prepared_nodes_module_once(monkeypatch, cache_dir):
    import libsection._node as node_module

    built = []
    real_node_graph = node_module._node_graph

    def recording_node_graph(node):
        built.append(type(node.op).__name__)
        return real_node_graph(node)

    monkeypatch.setattr(node_module, "_node_graph", recording_node_graph)
    x, y = pt.dvector(), pt.dvector()
    outputs = [OURS["Helper"]()(x), OURS["MaybeAdd"](False)(x, y), OURS["Combine"]("mul")(x, y)]
    f = function([x, y], outputs, "CVM")
    assert sorted(built) == ["Combine", "Helper", "MaybeAdd"]  # prepared, then only linked
    assert not node_module._prepared_graphs
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    for got, expected in zip(f(a, b), [a * 3 * 2 + 1, a + b, a * b], strict=True):
        np.testing.assert_array_equal(got, expected)


def test_importing_the_drop_in_loads_nothing_cvm_does_not_need():
    import subprocess
    import sys

    code = (
        "import sys, libsection.pytensor; "
        "print(sorted(m for m in ('numba', 'setuptools', 'jax') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
