"""The core's notices go through Python's `logging` (logger `libsection`), each exactly once,
and nothing of the core's reaches fd 2 directly (a notebook could not capture it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
from examples import OPS_DIR, load_op_module

SCRIPT = """
import contextlib, io, json, logging, sys
sys.path.insert(0, %r)
from examples import load_op_module
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record)
logger = logging.getLogger("libsection")
logger.addHandler(Keep())
logger.setLevel(logging.DEBUG)
captured = io.StringIO()
with contextlib.redirect_stderr(captured):
    load_op_module("vector_times_vector").VectorTimesVector().compiled("float64[:]", "float64[:]")
    load_op_module("vector_times_vector").VectorTimesVector().compiled("float64[:]", "float64[:]")
print(json.dumps({"records": [[r.levelname, r.getMessage(), getattr(r, "seconds", None)]
                              for r in records],
                  "redirected": captured.getvalue()}))
"""


def test_a_cold_process_logs_setup_and_compile_once_and_writes_nothing_to_stderr(tmp_path):
    env = dict(os.environ, LIBSECTION_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT % str(OPS_DIR)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stderr == ""
    out = json.loads(run.stdout)
    assert out["redirected"] == ""
    records = out["records"]
    compiled = [r for r in records if r[1].startswith("compiled ")]
    assert len(compiled) == 1, records
    level, message, seconds = compiled[0]
    assert level == "INFO"
    assert message.startswith(
        "compiled VectorTimesVector(float64[:], float64[:]) -> float64[:] in "
    )
    assert isinstance(seconds, float) and seconds > 0
    setup = [r[1] for r in records if "one-time setup" in r[1]]
    # The precompiled header (GCC only); the runtime comes built with the package.
    assert len(setup) <= 1 and all(m.startswith("one-time setup: precompiling") for m in setup)
    assert all(not r[1].startswith("libsection:") for r in records)


def test_compiles_reach_logging_handlers_not_fd_2(cache_dir, caplog, capfd):
    op = load_op_module("vector_times_vector").VectorTimesVector()
    x, y = np.arange(3, dtype=np.uint16), np.arange(3, dtype=np.uint8)  # types no other test builds
    with caplog.at_level("DEBUG", logger="libsection"):
        np.testing.assert_array_equal(op(x, y), x * y)
    assert capfd.readouterr().err == ""
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compiled")]
    assert len(messages) == 1 and messages[0].startswith(
        "compiled VectorTimesVector(uint16[:], uint8[:]) -> uint16[:] in "
    ), messages


def test_silencing_the_logger_silences_the_core(tmp_path):
    script = (
        "import logging, sys; sys.path.insert(0, %r);"
        "logging.basicConfig(level=logging.INFO);"
        "logging.getLogger('libsection').setLevel(logging.ERROR);"
        "from examples import load_op_module;"
        "load_op_module('vector_times_vector').VectorTimesVector()"
        ".compiled('float32[:]', 'float32[:]')" % str(OPS_DIR)
    )
    env = dict(os.environ, LIBSECTION_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert run.stderr == ""
