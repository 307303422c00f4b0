"""The expander's _core bindings: signature strings, expansion, versions agree with the tool."""

import json
import subprocess
from pathlib import Path

import pytest
from test_expand_cli import VTV, section_expand

import libsection
from libsection import _core

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "expand"


def test_signature_strings_parse_and_report_bad_characters_as_value_errors():
    types = _core.parse_types("float64[:],int64,object", "input")
    assert [str(t) for t in types] == ["float64[:]", "int64", "object"]
    assert types[0].pytensor_str() == "Vector(float64, shape=(?,))"
    assert types[2].dtype_name is None
    with pytest.raises(ValueError, match=r"input 1 `flot32`: unknown dtype `flot32`"):
        _core.parse_types("float64[:],flot32")
    fields = _core.parse_params("k:int64,a:float64[:]")
    assert [(name, str(t)) for name, t in fields] == [("k", "int64"), ("a", "float64[:]")]


def test_python_expansion_and_version_equal_the_tool_output():
    op = _core.OpDescription()
    op.inputs = _core.parse_types("float64[:],float64[:]")
    op.outputs = _core.parse_types("float64[:]", "output")
    op.func_name = "APPLY_SPECIFIC(vector_times_vector)"
    options = _core.ExpandOptions()
    options.line_directives = False
    options.newline_fix = False
    loaded = libsection.load((GOLDEN / VTV).resolve())
    expansion = _core.expand(loaded, op, _core.single_node_context(op), options)
    expected = json.loads((GOLDEN / "vtv_float64.expected.json").read_text())
    for method, text in expected.items():
        if method == "c_code_cache_version":
            assert _core.op_cache_version(loaded, op, options) == text
        else:
            assert expansion[method] == text, method
    assert expansion["diagnostics"] == []


def test_relocates_resume_directives_into_a_module():
    module = 'x\n#line 40 "<libsection-generated> c_code"\ny\n'
    assert _core.relocate_line_directives(module, "mod.cpp") == 'x\n#line 3 "mod.cpp"\ny\n'


def test_tool_and_bindings_share_one_cache_version():
    run = subprocess.run(
        [
            section_expand(),
            VTV,
            "--inputs",
            "float64[:],float64[:]",
            "--outputs",
            "float64[:]",
            "--func-name",
            "APPLY_SPECIFIC(vector_times_vector)",
            "--format",
            "json",
        ],
        cwd=GOLDEN,
        capture_output=True,
        text=True,
        check=True,
    )
    op = _core.OpDescription()
    op.inputs = _core.parse_types("float64[:],float64[:]")
    op.outputs = _core.parse_types("float64[:]", "output")
    op.func_name = "APPLY_SPECIFIC(vector_times_vector)"
    loaded = libsection.load((GOLDEN / VTV).resolve())
    assert json.loads(run.stdout)["c_code_cache_version"] == _core.op_cache_version(loaded, op)
