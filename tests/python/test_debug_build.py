"""LIBSECTION_DEBUG=1 builds op modules for gdb: -O0 -g, keyed apart from the optimized ones, the
generated source kept where the debug info names it, and gdb stopping at a line of the op's own
.c file (the #line directives make that possible)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OP_FILE = ROOT / "ops/vector_times_vector/vectorTimesVector.c"
LOOP_LINE = next(
    i
    for i, line in enumerate(OP_FILE.read_text().splitlines(), start=1)
    if "z_ptr[i * z_str] =" in line
)

DRIVER = textwrap.dedent(f"""
    import json, sys
    import numpy as np
    import libsection
    f = libsection.build({str(OP_FILE)!r}, "APPLY_SPECIFIC(vector_times_vector)",
                         inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
    result = f(np.arange(3.0), np.full(3, 2.0))
    print(json.dumps(dict(f.info, result=result.tolist())))
""")


def build_in_subprocess(cache: Path, debug: str | None) -> dict:
    """Builds the op in a new process (a process keeps the modules it loaded)."""
    env = dict(os.environ, LIBSECTION_CACHE_DIR=str(cache))
    env.pop("LIBSECTION_DEBUG", None)
    if debug is not None:
        env["LIBSECTION_DEBUG"] = debug
    run = subprocess.run(
        [sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def readelf(*options: str, library) -> str:
    return subprocess.run(
        ["readelf", *options, str(library)], capture_output=True, text=True, check=True
    ).stdout


def sections(library: Path) -> set[str]:
    return set(re.findall(r"\]\s+(\.\S+)", readelf("-S", "-W", library=library)))


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    cache = tmp_path_factory.mktemp("debug") / "cache"
    optimized = build_in_subprocess(cache, None)
    debug = build_in_subprocess(cache, "1")
    return cache, optimized, debug


needs_readelf = pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf not installed")


@needs_readelf
def test_debug_modules_have_debug_info_and_sit_apart_in_the_cache(builds):
    cache, optimized, debug = builds
    assert optimized["result"] == debug["result"] == [0.0, 2.0, 4.0]
    assert debug["key"] != optimized["key"] and debug["compiled"]
    assert ".debug_info" in sections(Path(debug["library"]))
    assert ".debug_info" not in sections(Path(optimized["library"]))
    manifest = json.loads((cache / "entries" / debug["key"] / "manifest.json").read_text())
    assert " -O0 " in manifest["compile_command"] and " -g " in manifest["compile_command"]
    assert " -O3 " not in manifest["compile_command"]


@needs_readelf
def test_the_debug_info_names_the_kept_source_and_the_op_file(builds):
    cache, _, debug = builds
    kept = cache / "entries" / debug["key"] / "source.cpp"  # where the README says it is
    assert kept.is_file() and "APPLY_SPECIFIC" in kept.read_text()
    lines = readelf("--debug-dump=info", library=debug["library"])
    names = set(re.findall(r"DW_AT_(?:name|comp_dir)\s*:.*?:\s*(\S+)\s*$", lines, re.M))
    assert any(name.endswith(str(kept)) or name == str(kept.parent) for name in names), sorted(
        n for n in names if "/" in n
    )[:20]
    work = str(cache / "tmp")  # where the build ran; renamed into entries/ when done
    assert not any(name.startswith(work) for name in names), "debug info names the work folder"
    decoded = readelf("--debug-dump=decodedline", library=debug["library"])
    assert OP_FILE.name in decoded and str(LOOP_LINE) in decoded


def test_a_debug_setting_other_than_0_or_1_is_an_error(tmp_path):
    env = dict(os.environ, LIBSECTION_CACHE_DIR=str(tmp_path / "cache"), LIBSECTION_DEBUG="yes")
    run = subprocess.run(
        [sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode != 0 and "LIBSECTION_DEBUG is `yes`: give 1" in run.stderr


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb not installed")
def test_gdb_stops_at_a_line_of_the_ops_c_file(builds, tmp_path):
    cache, _, debug = builds
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = dict(os.environ, LIBSECTION_CACHE_DIR=str(cache), LIBSECTION_DEBUG="1")
    run = subprocess.run(
        [
            "gdb",
            "-q",
            "-batch",
            "-nx",
            "-ex",
            "set breakpoint pending on",
            "-ex",
            f"break {OP_FILE.name}:{LOOP_LINE}",
            "-ex",
            "run",
            "-ex",
            "print i",
            "-ex",
            "info source",
            "-ex",
            "kill",
            "--args",
            sys.executable,
            str(driver),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )  # gdb used to hang reading
    out = run.stdout + run.stderr  # /proc/self/fd/N: its own fd
    assert re.search(
        rf"Breakpoint 1, .*vector_elemwise_mult.*\n.*{OP_FILE.name}:{LOOP_LINE}", out
    ) or re.search(rf"at {re.escape(str(OP_FILE))}:{LOOP_LINE}", out), out[-3000:]
    assert "$1 = 0" in out, out[-3000:]  # the loop's first iteration
