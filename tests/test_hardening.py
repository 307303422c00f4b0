"""The C++ core under AddressSanitizer and UndefinedBehaviorSanitizer: the unit tests, and a short
libFuzzer run of every fuzz target. Slow (they build with clang); skip with `-m "not slow"`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLANG = shutil.which("clang++-14") or shutil.which("clang++")
FUZZ_SECONDS = int(os.environ.get("LIBSECTION_FUZZ_SECONDS", "20"))
SANITIZER_ENV = {
    **os.environ,
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}

pytestmark = [pytest.mark.slow, pytest.mark.once_per_run]


BUILD_DIR = ROOT / "build/sanitize"


@pytest.fixture(scope="module")
def sanitized_build() -> Path:
    """One clang build, ASan+UBSan with fuzzing coverage, of the unit tests and fuzz targets."""
    assert CLANG, "clang++ is needed for sanitizers and libFuzzer (deps/apt-packages.txt)"
    subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(BUILD_DIR),
            "-G",
            "Ninja",
            f"-DCMAKE_CXX_COMPILER={CLANG}",
            "-DCMAKE_BUILD_TYPE=Debug",
            "-DLIBSECTION_SANITIZE=address,undefined",
            "-DLIBSECTION_BUILD_PYTHON=OFF",
            "-DLIBSECTION_BUILD_TOOLS=OFF",
            "-DLIBSECTION_BUILD_TESTS=ON",
            "-DLIBSECTION_BUILD_FUZZERS=ON",
        ],
        check=True,
        capture_output=True,
    )
    build = subprocess.run(
        ["cmake", "--build", str(BUILD_DIR), "-j", str(os.cpu_count() or 2)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return BUILD_DIR


def test_unit_tests_pass_under_address_and_undefined_behaviour_sanitizers(sanitized_build):
    run = subprocess.run(
        [str(sanitized_build / "tests/libsection_tests"), "--no-version"],
        capture_output=True,
        text=True,
        env=SANITIZER_ENV,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-6000:]


def fuzz_targets() -> list[str]:
    return sorted(p.stem for p in (ROOT / "tests/fuzz").glob("fuzz_*.cpp"))


@pytest.mark.parametrize("target", fuzz_targets())
def test_fuzz_target_finds_nothing_in_a_short_run(target, tmp_path, sanitized_build):
    build_dir = sanitized_build
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    # The example ops and the parser's golden inputs seed the corpus too.
    for example in [*(ROOT / "ops").glob("*/*.c"), *(ROOT / "tests/golden/parse").glob("*.c")]:
        shutil.copy(example, corpus / example.name)
    run = subprocess.run(
        [
            str(build_dir / "tests" / target),
            str(corpus),
            str(ROOT / "tests/fuzz/seeds"),
            f"-max_total_time={FUZZ_SECONDS}",
            "-max_len=4096",
            "-timeout=10",
            f"-dict={ROOT / 'tests/fuzz/sections.dict'}",
            f"-artifact_prefix={tmp_path}/",
        ],
        capture_output=True,
        text=True,
        env=SANITIZER_ENV,
    )
    assert run.returncode == 0, run.stderr[-6000:]
    assert "Done" in run.stderr
