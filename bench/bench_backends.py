"""Backend benchmark: one drop-in op in every PyTensor backend, side by side in one run.

    python bench/bench_backends.py

The op is the tutorial's VectorTimesVector (ops/vector_times_vector) on libsection's drop-in
ExternalCOp, with infer_shape and a gradient. Measures, per call of a compiled PyTensor function:
  * n = 3 and n = 10^6: NUMBA mode against CVM for the same op, and against PyTensor's own
    Numba `x * y`;
  * JAX: the jitted conversion of the op (an XLA FFI call) against the jitted built-in
    `x * y`; skipped without JAX (bench_jax.py has the JAX rows in detail);
  * a graph calling the op 100 times, as 100 nodes and as a 100-step Scan: NUMBA against CVM;
  * compile time of each backend for the op (function creation and first call, the op's C
    module already in libsection's cache).
Times are CPU time of the process (time.process_time: a shared machine's other load does not
count, every thread of this process does), the best of several interleaved repeats. Prints a
table of ratios.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import timeit
import warnings
from pathlib import Path

from timefmt import fmt_time  # bench/ is the script's own folder

ROOT = Path(__file__).resolve().parent.parent
VTV_SOURCE = ROOT / "ops" / "vector_times_vector" / "vectorTimesVector.c"
FUNC = "APPLY_SPECIFIC(vector_times_vector)"


def make_op_class():
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    from libsection.pytensor import ExternalCOp

    class VectorTimesVector(ExternalCOp):
        __props__ = ()

        def __init__(self):
            super().__init__([str(VTV_SOURCE)], FUNC)

        def make_node(self, x, y):
            return Apply(self, [x, y], [pt.dvector()])

        def infer_shape(self, *args):  # (node, shapes) since PyTensor 3.3, (fgraph, ...) before
            return [args[-1][0]]

        def _gradient(self, inputs, outputs, cotangents):
            x, y = inputs
            return [self(cotangents[0], y), self(cotangents[0], x)]

    setattr(
        VectorTimesVector,
        "pullback" if hasattr(Op, "pullback") else "L_op",
        VectorTimesVector._gradient,
    )
    VectorTimesVector.__qualname__ = "VectorTimesVector"  # PyTensor pickles ops by name
    globals()["VectorTimesVector"] = VectorTimesVector
    return VectorTimesVector


def best_of(candidates: dict, number: int, repeat: int = 7) -> dict:
    """Best per-call time of each candidate, the repeats interleaved so noise hits all alike."""
    times = {k: float("inf") for k in candidates}
    for _ in range(repeat):
        for k, fn in candidates.items():
            times[k] = min(
                times[k], timeit.timeit(fn, number=number, timer=time.process_time) / number
            )
    return times


def timed(build):
    start = time.perf_counter()
    result = build()
    return result, time.perf_counter() - start


def function(inputs, outputs, mode):
    import pytensor

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*", category=UserWarning)
        return pytensor.function(inputs, outputs, mode=mode)


def numba_and_cvm(op_class, rows, compile_times):
    import numpy as np
    import pytensor.tensor as pt

    x, y = pt.dvector("x"), pt.dvector("y")
    op = op_class()
    functions = {}
    for mode in ("CVM", "NUMBA"):
        a = np.ones(3)
        f, seconds = timed(lambda: function([x, y], op(x, y), mode))
        _, first = timed(lambda: f(a, a))
        functions[mode] = f
        compile_times[mode] = seconds + first
    functions["numba x*y"] = function([x, y], x * y, "NUMBA")
    for n in (3, 1_000_000):
        a, b = np.random.rand(n), np.random.rand(n)
        for f in functions.values():
            assert np.array_equal(f(a, b), a * b)
        t = best_of(
            {k: (lambda f=f: f(a, b)) for k, f in functions.items()},
            number=20_000 if n == 3 else 50,
        )
        rows.append(
            (
                f"call, n = {n:,}",
                t["NUMBA"],
                t["CVM"],
                t["numba x*y"],
                f"{t['NUMBA'] / t['CVM']:.2f}× CVM, {t['NUMBA'] / t['numba x*y']:.2f}× Numba x*y",
                "≤ 1.2× CVM" + (", ≤ 1.2× Numba x*y" if n == 3 else ""),
            )
        )

    # The op 100 times in one graph: 100 nodes, and a 100-step Scan.
    import pytensor

    z = x
    for _ in range(100):
        z = op(z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # scan's return signature, 3.x
        step, _ = pytensor.scan(lambda z, y: op(z, y), outputs_info=x, non_sequences=y, n_steps=100)
    for label, out in (("100 nodes", z), ("Scan, 100 steps", step[-1])):
        fs = {mode: function([x, y], out, mode) for mode in ("CVM", "NUMBA")}
        a, b = np.random.rand(3), np.ones(3)
        for f in fs.values():
            assert np.allclose(f(a, b), a)
        t = best_of({k: (lambda f=f: f(a, b)) for k, f in fs.items()}, number=500)
        rows.append(
            (f"{label}, n = 3", t["NUMBA"], t["CVM"], None, f"{t['NUMBA'] / t['CVM']:.2f}× CVM", "")
        )


def jax_rows(op_class, rows, compile_times):
    try:
        import jax
    except ImportError:
        rows.append(("JAX", None, None, None, "skipped: JAX is not installed", ""))
        return
    import numpy as np
    import pytensor.tensor as pt
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    x, y = pt.dvector("x"), pt.dvector("y")
    op = op_class()
    f, seconds = timed(lambda: function([x, y], op(x, y), "JAX"))
    _, first = timed(lambda: f(np.ones(3), np.ones(3)))
    compile_times["JAX"] = seconds + first
    # The call itself: the jitted conversion, without pytensor.function's Python wrapper.
    fgraph = FunctionGraph([x, y], [op(x, y)], clone=True)
    get_mode("JAX").optimizer(fgraph)
    converted = jax_funcify(fgraph)
    ours = jax.jit(lambda a, b: converted(a, b)[0])

    builtin = jax.jit(lambda a, b: a * b)

    for n in (3, 1_000_000):
        a, b = jax.numpy.asarray(np.random.rand(n)), jax.numpy.asarray(np.random.rand(n))
        assert np.array_equal(np.asarray(ours(a, b)), np.asarray(builtin(a, b)))
        t = best_of(
            {
                "ours": lambda: ours(a, b).block_until_ready(),
                "built-in": lambda: builtin(a, b).block_until_ready(),
            },
            number=5_000 if n == 3 else 30,
        )
        rows.append(
            (
                f"JAX jit, n = {n:,}",
                t["ours"],
                None,
                t["built-in"],
                f"{t['ours'] / t['built-in']:.2f}× jitted `x * y`",
                "≤ 1.5×" if n == 3 else "",
            )
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_known_args()  # ./dev bench passes every script the same options

    with tempfile.TemporaryDirectory(prefix="bench_backends_") as tmp:
        os.environ["LIBSECTION_CACHE_DIR"] = str(Path(tmp) / "libsection")
        os.environ["PYTENSOR_FLAGS"] = f"compiledir={Path(tmp) / 'pytensor'}"
        warnings.filterwarnings("ignore", message="A module that was loaded by this ModuleCache")
        op_class = make_op_class()
        # Build the op's C module once, so compile times measure the backends alone.
        import numpy as np
        import pytensor.tensor as pt

        from libsection.pytensor import compile_node

        compile_node(op_class()(pt.dvector(), pt.dvector()).owner)(np.ones(1), np.ones(1))
        rows, compile_times = [], {}
        print("NUMBA and CVM ...", file=sys.stderr)
        numba_and_cvm(op_class, rows, compile_times)
        print("JAX ...", file=sys.stderr)
        jax_rows(op_class, rows, compile_times)

    table = [
        (label, fmt_time(a), fmt_time(b), fmt_time(c), ratio, target)
        for label, a, b, c, ratio, target in rows
    ]
    table.append(
        (
            "compile + first call",
            *(fmt_time(compile_times.get(m)) for m in ("NUMBA", "CVM", "JAX")),
            "NUMBA / CVM / JAX (op module cached)",
            "",
        )
    )
    header = ("measure", "ours (NUMBA or JAX)", "ours CVM", "reference", "ratio", "target")
    widths = [max(len(str(row[i])) for row in table + [header]) for i in range(len(header))]

    def line(row):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths)) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in table:
        print(line(row))
    import numba
    import pytensor

    versions = f"PyTensor {pytensor.__version__}, Numba {numba.__version__}"
    try:
        import jax

        versions += f", JAX {jax.__version__}"
    except ImportError:
        pass
    print(
        f"\nPython {sys.version.split()[0]}, {versions}; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
