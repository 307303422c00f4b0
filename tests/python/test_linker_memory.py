"""Calling a compiled op many times, on success and failure paths, must not grow memory."""

import numpy as np
import pytest
from linker_ops import VTV, VTV_FUNC, CheckPositive, Double

from libsection._build import Module, build

CALLS = 100_000


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LIBSECTION_CACHE_DIR", str(tmp_path / "cache"))


def grows(call, calls=CALLS):
    for _ in range(1000):  # warm up allocator pools and output reuse
        call()
    before = rss_bytes()
    for _ in range(calls):
        call()
    return rss_bytes() - before


def test_vector_times_vector_calls_do_not_leak():
    f = build(VTV, VTV_FUNC, inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
    x, y, short = np.ones(100), np.ones(100), np.ones(3)
    bad_dtype = np.ones(100, dtype=np.float32)

    def success():
        f(x, y)

    def failures():
        for bad in ((x, short), (bad_dtype, y)):
            try:
                f(*bad)
            except (ValueError, TypeError):
                pass

    assert grows(success) < 1 << 20
    assert grows(failures) < 1 << 20


def test_python_defined_module_calls_do_not_leak():
    double = Double()
    m = Module("check")
    x = m.input(double, "x")
    (y,) = m.apply(CheckPositive(), [x], [double])
    f = m.compile([y])

    def both():
        f(1.0)
        try:
            f(-1.0)
        except ValueError:
            pass

    assert grows(both) < 1 << 20
