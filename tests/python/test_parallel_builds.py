"""Builds from several threads at once: never a hang (the first build of a process used to
deadlock two threads in 3 of 11 runs), and build_many compiles concurrently."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import libsection

OPS = Path(__file__).resolve().parents[2] / "ops"

TWO_THREADS = textwrap.dedent(f"""
    import sys, threading
    sys.path.insert(0, {str(OPS)!r})
    from square.op import Square
    from vector_times_vector.op import VectorTimesVector
    import numpy as np
    barrier = threading.Barrier(2)
    results = {{}}
    def first_build(name, op, *args):
        barrier.wait()  # both threads reach their process's first build together
        results[name] = op(*args)
    threads = [threading.Thread(target=first_build, args=("sq", Square(), np.arange(3.0))),
               threading.Thread(target=first_build,
                                args=("vtv", VectorTimesVector(), np.ones(3), np.arange(3.0)))]
    for t in threads: t.start()
    for t in threads: t.join()
    assert list(results["sq"]) == [0, 1, 4] and list(results["vtv"]) == [0, 1, 2], results
    print("ok")
""")


def test_two_threads_doing_their_first_builds_never_hang(cache_dir):
    def round_(_):
        run = subprocess.run(
            [sys.executable, "-c", TWO_THREADS], capture_output=True, text=True, timeout=120
        )
        return run.returncode, run.stdout + run.stderr

    with ThreadPoolExecutor(2) as pool:  # 50 fresh processes, two at a time
        results = list(pool.map(round_, range(50)))
    failures = [out for code, out in results if code != 0]
    assert not failures, failures[0]


def test_build_many_builds_each_op_and_keeps_the_order(cache_dir):
    specs = [
        dict(files=OPS / "square/square.c", inputs=["float64[:]"], outputs=["float64[:]"]),
        dict(
            files=OPS / "vector_times_vector/vectorTimesVector.c",
            func_name="APPLY_SPECIFIC(vector_times_vector)",
            inputs=["float64[:]", "float64[:]"],
            outputs=["float64[:]"],
        ),
    ]
    square, vtv = libsection.build_many(specs)
    np.testing.assert_array_equal(square(np.arange(3.0)), [0, 1, 4])
    np.testing.assert_array_equal(vtv(np.arange(3.0), np.full(3, 2.0)), [0, 2, 4])
