"""The expander against the installed PyTensor's ExternalCOp, byte for byte.

With `#line` directives and the newline fix off, the golden expectations under
tests/golden/expand/ (which the C++ unit tests check the expander against) and the drop-in
`libsection.pytensor.ExternalCOp` must give exactly the strings PyTensor's own ExternalCOp gives
its CLinker, for the same single-node graph.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from expand_reference import METHODS, linker_strings, make_op_class, split_types
from pytensor.link.c.op import ExternalCOp as PyTensorExternalCOp
from test_expand_cli import VTV

import libsection
from libsection.pytensor import ExternalCOp

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "expand"
CASES = sorted(GOLDEN.glob("*.case.json"))


class ReferenceModeCOp(ExternalCOp):
    """The drop-in with both deliberate differences turned off."""

    line_directives = False
    newline_fix = False


def case_name(path):
    return path.name.removesuffix(".case.json")


def case_ops(spec, files):
    """(PyTensor's op, the drop-in's op) for one golden case."""
    params = [tuple(p.split(":", 1)) for p in split_types(spec.get("params", ""))]
    ops = []
    for base in (PyTensorExternalCOp, ReferenceModeCOp):
        cls = make_op_class(
            base,
            params=params,
            check_input=spec.get("check_input", True),
            num_inputs=spec.get("num_inputs"),
            num_outputs=spec.get("num_outputs"),
        )
        ops.append(
            cls(
                [files / f for f in spec["files"]],
                spec.get("func_name"),
                split_types(spec["inputs"]),
                split_types(spec["outputs"]),
            )
        )
    return ops


def test_there_are_golden_cases():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=case_name)
def test_golden_expectations_equal_installed_pytensor(case):
    spec = json.loads(case.read_text())
    expected = json.loads(case.with_name(case_name(case) + ".expected.json").read_text())
    reference_op, _ = case_ops(spec, GOLDEN)
    reference = linker_strings(reference_op)
    for method in METHODS:
        assert expected[method] == reference[method], method


@pytest.mark.parametrize("case", CASES, ids=case_name)
def test_drop_in_equals_installed_pytensor(case):
    spec = json.loads(case.read_text())
    reference_op, drop_in_op = case_ops(spec, GOLDEN)
    reference = linker_strings(reference_op)
    ours = linker_strings(drop_in_op)
    for method in METHODS:
        assert ours[method] == reference[method], method


DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_macros_equal_installed_pytensor_for_every_dtype(dtype):
    spec = {
        "files": [VTV],
        "inputs": f"{dtype}[:],{dtype}[:,:]",
        "outputs": f"{dtype}[:]",
        "func_name": "f",
    }
    reference_op, drop_in_op = case_ops(spec, GOLDEN)
    reference = linker_strings(reference_op)["c_support_code_apply"]
    assert f"#define TYPENUM_INPUT_0 {np.dtype(dtype).num}\n" in reference
    assert linker_strings(drop_in_op)["c_support_code_apply"] == reference


def ops_section_files():
    return sorted((ROOT / "ops").glob("**/*.c"))


def test_every_section_file_in_ops_expands_as_installed_pytensor():
    """Every file under ops/, whatever is there: one generic signature each (the strings do not
    depend on the op's real arity beyond the macros, which this signature exercises)."""
    failures = []
    paths = ops_section_files()
    for path in paths:
        sections = libsection.load_sections([path])
        func_name = None if "code" in sections else "APPLY_SPECIFIC(f)"
        spec = {
            "files": [str(path)],
            "inputs": "float64[:],float64[:]",
            "outputs": "float64[:]",
            "func_name": func_name,
        }
        reference_op, drop_in_op = case_ops(spec, Path("/"))
        reference = linker_strings(reference_op)
        ours = linker_strings(drop_in_op)
        failures += [f"{path}: {m}" for m in METHODS if ours[m] != reference[m]]
    assert failures == []
    print(f"{len(paths)} section files under ops/ compared")
