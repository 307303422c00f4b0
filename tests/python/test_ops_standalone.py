"""Every example op in ops/ runs standalone (no PyTensor) and matches NumPy."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from examples import EXAMPLES, OPS_DIR, X, Y, load_op_module


def assert_matches(actual, expected) -> None:
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, rtol=1e-12)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-12)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.folder)
def test_op_matches_numpy(example, cache_dir):
    op = example.op()
    assert_matches(op(*example.inputs()), example.expected(*example.inputs()))
    if not example.strides:
        return
    # strided views go through the same code
    strided = tuple(v[::2] if isinstance(v, np.ndarray) else v for v in example.inputs())
    assert_matches(op(*strided), example.expected(*strided))


def test_every_ops_folder_has_an_example():
    folders = sorted({p.parent.name for p in OPS_DIR.glob("*/*.c")})
    assert folders == sorted(e.folder for e in EXAMPLES)


def test_every_ops_folder_lints_clean(section_lint):
    lint = subprocess.run([section_lint, str(OPS_DIR)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_variable_arity_op_takes_two_or_three_inputs(cache_dir):
    op = load_op_module("sum_up_to_three").SumUpToThree()
    np.testing.assert_allclose(op(X, Y), X + Y)
    np.testing.assert_allclose(op(X, Y, Y), X + 2 * Y)
    with pytest.raises(TypeError, match="two or three"):
        op(X)


def test_state_kept_in_the_struct_is_reused_across_longer_and_shorter_inputs(cache_dir):
    op = load_op_module("running_max").RunningMax()
    for n in (3, 100, 5, 1000, 2):  # grows past the initial 16-element scratch buffer
        x = np.random.default_rng(n).normal(size=n)
        np.testing.assert_allclose(op(x), np.maximum.accumulate(x))


def test_op_raises_a_clear_python_error_on_bad_input(cache_dir):
    op = load_op_module("checked_log").CheckedLog()
    with pytest.raises(ValueError, match=r"checked_log: x\[2\] = -1 is not positive"):
        op(np.array([1.0, 2.0, -1.0, 0.0]))
    np.testing.assert_allclose(op(np.array([1.0, np.e])), [0.0, 1.0])  # still usable after


def test_params_are_plain_attributes_and_distinct_values_build_distinct_modules(cache_dir):
    module = load_op_module("scale_shift")
    np.testing.assert_allclose(module.ScaleShift(2.0, 0.0)(X), 2 * X)
    np.testing.assert_allclose(module.ScaleShift(0.0, 1.0)(X), np.ones_like(X))


def test_a_changed_param_is_seen_by_the_next_call(cache_dir):
    op = load_op_module("scale_shift").ScaleShift(2.0, 0.0)
    np.testing.assert_allclose(op(X), 2 * X)
    op.shift = 1.0
    np.testing.assert_allclose(op(X), 2 * X + 1)


def test_calls_dispatch_on_dtype_dimensions_and_number_types(cache_dir):
    op = load_op_module("vector_times_scalar").VectorTimesScalar()
    np.testing.assert_allclose(op(X, 2.0), 2 * X)
    np.testing.assert_allclose(op(X.astype(np.float32), np.float32(2.0)), 2 * X)
    np.testing.assert_allclose(op(X, 2.0), 2 * X)  # the first signature again, from the table
    assert op._dispatch.size == 2
    with pytest.raises(TypeError, match="cannot pass a str to an op"):
        op("not an array", 2.0)
    assert op._dispatch.size == 2


def test_wrong_dtype_is_a_type_error_before_the_op_runs(cache_dir):
    op = load_op_module("sum_up_to_three").SumUpToThree()
    with pytest.raises(TypeError):
        op(X.astype(np.float32), Y.astype(np.float32))


def test_ops_pickle_without_compiled_handles_and_work_after(cache_dir):
    op = load_op_module("square").Square()
    op(X)
    clone = pickle.loads(pickle.dumps(op))
    assert len(clone._compiled) == 0
    np.testing.assert_allclose(clone(X), X * X)


def test_a_new_process_loads_the_cached_op_without_compiling(cache_dir):
    script = (
        "import sys, numpy as np; sys.path.insert(0, %r);"
        "from examples import load_op_module;"
        "op = load_op_module('vector_times_vector').VectorTimesVector();"
        "compiled = op.compiled('float64[:]', 'float64[:]');"
        "print(compiled.info['compiled'])" % str(OPS_DIR)
    )
    first = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    second = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert (first.stdout.strip(), second.stdout.strip()) == ("True", "False")


def test_compiling_is_logged_and_cache_hits_are_not(cache_dir, caplog):
    op = load_op_module("vector_times_vector").VectorTimesVector()
    x, y = np.arange(3, dtype=np.int16), np.arange(3, dtype=np.int32)  # types no other test builds
    with caplog.at_level("INFO", logger="libsection"):
        np.testing.assert_array_equal(op(x, y), x * y)
    assert [
        r.getMessage().split(" in ")[0]
        for r in caplog.records
        if "one-time setup" not in r.getMessage()
    ] == ["compiled VectorTimesVector(int16[:], int32[:]) -> int32[:]"]
    caplog.clear()
    with caplog.at_level("INFO", logger="libsection"):
        load_op_module("vector_times_vector").VectorTimesVector()(x, y)  # cache hit: silent
    assert caplog.records == []


# Every example op, built with warnings as errors: as C++, and declared C where it can be (an op
# with params or struct sections cannot, and is told to stay C++).
STRICT_BUILDS = """
import sys, types
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import libsection
from examples import EXAMPLES, load_op_module


def declared_c(module):
    # The module's op classes, declared C, their files named by full path.
    classes = {}
    for name, value in vars(module).items():
        if isinstance(value, type) and issubclass(value, libsection.ExternalCOp):
            files = value.func_files
            files = [files] if isinstance(files, (str, Path)) else files
            paths = [str(value.get_path(f)) for f in files]
            classes[name] = type(name, (value,), {"language": "c", "func_files": paths})
    return types.SimpleNamespace(**{**vars(module), **classes})


for example in EXAMPLES:
    module = load_op_module(example.folder)
    for language, namespace in (("c++", module), ("c", declared_c(module))):
        op = example.make(namespace)
        assert op.language == language
        try:
            op(*example.inputs())
        except libsection.CompileError as e:
            print(f"{example.folder} ({language}): {e}")
        except libsection.LinkError as e:
            if language != "c" or 'language = "c++"' not in str(e):
                raise
"""


def test_every_example_op_builds_under_wall_wextra_werror(tmp_path):
    strict = "-Wall -Wextra -Werror"
    env = {
        **os.environ,
        "LIBSECTION_CACHE_DIR": str(tmp_path / "cache"),
        "LIBSECTION_CXXFLAGS": strict,
        "LIBSECTION_CFLAGS": strict,
    }
    run = subprocess.run(
        [sys.executable, "-c", STRICT_BUILDS, str(OPS_DIR)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "", run.stdout
    # Both languages were built, each module with the flags.
    commands = [
        json.loads(m.read_text())["compile_command"]
        for m in (tmp_path / "cache" / "entries").glob("*/manifest.json")
    ]
    assert all(strict in c for c in commands)
    assert {("-x c++" in c, "-x c " in c) for c in commands} == {(True, False), (False, True)}
