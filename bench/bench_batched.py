"""Batched ops: a drop-in op's batch in one C loop, in every backend, side by side with the
built-in in one run.

    python bench/bench_batched.py [--reps N]

Three ops, each batched by `vectorize_graph` (CVM, NUMBA) and `jax.jit(jax.vmap(...))` (JAX):
  * undeclared: the tutorial's VectorTimesVector (ops/vector_times_vector, drop-in, with
    `gufunc_signature = "(n),(n)->(n)"`), z = x * y on 3-element rows, against the built-in
    `x * y` on the whole batch (targets from issue #37: CVM <= 3x and NUMBA <= 3x at 64 rows,
    JAX <= 1.5x at 10,000 rows);
  * declared: BatchTimesBatch (ops/batch_times_batch, `vmap_method = "broadcast_all"`: its C code
    takes the whole batch), the same sizes and reference (<= 1.2x in all three);
  * a real op: OdeSolve (ops/ode_solve), 1,000 Runge-Kutta steps per row, 64 rows, against the
    sum of its 64 single calls of the compiled op, the cheapest call there is (<= 1.05x).
The "before" column is the same batch without libsection's batching: PyTensor's `Blockwise`
(a Python loop of thunk calls in CVM, Numba's loop of boxed op calls in NUMBA) and the JAX
handler's loop of full op calls. Times are the best of interleaved repeats of CPU time
(time.process_time: every thread of this process, no other process's load).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from timefmt import fmt_time  # bench/ is the script's own folder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "ops"))
from bench_backends import make_op_class  # noqa: E402
from examples import load_op_module  # noqa: E402


def best_of(candidates: dict, number: int, repeat: int) -> dict:
    """Best per-call CPU time of each candidate, the repeats interleaved."""
    times = {k: float("inf") for k in candidates}
    for _ in range(repeat):
        for k, fn in candidates.items():
            start = time.process_time()
            for _ in range(number):
                fn()
            times[k] = min(times[k], (time.process_time() - start) / number)
    return times


def pytensor_functions(op, inputs, reference, mode):
    """(batched, before, built-in) compiled functions of `op` vectorized over `inputs`."""
    import pytensor
    from pytensor.compile.mode import get_mode
    from pytensor.graph.replace import vectorize_graph

    core = [v.type.clone(shape=v.type.shape[1:])() for v in inputs]
    out = vectorize_graph(op(*core), dict(zip(core, inputs, strict=True)))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*", category=UserWarning)
        batched = pytensor.function(inputs, out, mode=mode)
        before = pytensor.function(inputs, out, mode=get_mode(mode).excluding("libsection_batched"))
        builtin = None if reference is None else pytensor.function(inputs, reference, mode=mode)
    assert "Batched" in str(batched.maker.fgraph.toposort()[-1].op)
    return batched, before, builtin


def jax_functions(op, core_inputs):
    """(vmapped op, vmapped op through the handler's loop of op calls), jitted."""
    import jax
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    from libsection import _batched

    def converted():
        fgraph = FunctionGraph(core_inputs, [op(*core_inputs)], clone=True)
        get_mode("JAX").optimizer(fgraph)
        fn = jax_funcify(fgraph)
        return jax.jit(jax.vmap(lambda *a: fn(*a)[0]))

    ours = converted()
    batch = _batched.ffi_batch
    _batched.ffi_batch = lambda *args: None  # the handler's loop, for the "before" column
    try:
        before = converted()
    finally:
        _batched.ffi_batch = batch
    return ours, before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    args, _ = parser.parse_known_args()  # ./dev bench hands every benchmark the same options

    tmp = tempfile.mkdtemp(prefix="bench-batched-")
    os.environ.setdefault("LIBSECTION_CACHE_DIR", str(Path(tmp) / "libsection"))
    import jax
    import numpy as np
    import pytensor
    import pytensor.tensor as pt

    from libsection.pytensor import compile_node, pytensor_op

    undeclared_class = make_op_class()
    undeclared_class.gufunc_signature = "(n),(n)->(n)"
    undeclared = undeclared_class()
    declared = pytensor_op(load_op_module("batch_times_batch").BatchTimesBatch())
    ode = load_op_module("ode_solve").OdeSolve(steps=1000, dt=0.01)
    ode_op = pytensor_op(ode)
    rng = np.random.default_rng(0)
    rows = []

    def row(label, target, ours, reference, ref_label, before, number):
        for f in (ours, reference, before):
            f()  # compile and warm up
        t = best_of({"ours": ours, "ref": reference}, number, args.reps)
        t_before = best_of({"before": before}, max(1, number // 10), max(2, args.reps // 2))
        rows.append(
            (label, t["ours"], t["ref"], ref_label, t["ours"] / t["ref"], target,
             t_before["before"] / t["ref"])
        )  # fmt: skip

    X, Y = pt.dmatrix("X"), pt.dmatrix("Y")
    a, b = rng.random((64, 3)), rng.random((64, 3))
    for name, op, target in (
        ("undeclared", undeclared, "<= 3x"),
        ("declared", declared, "<= 1.2x"),
    ):
        for mode in ("CVM", "NUMBA"):
            ours, before, builtin = pytensor_functions(op, [X, Y], X * Y, mode)
            assert np.array_equal(ours(a, b), a * b) and np.array_equal(before(a, b), a * b)
            row(
                f"{name}, {mode}, vectorize_graph, 64 rows",
                target,
                lambda f=ours: f(a, b),
                lambda f=builtin: f(a, b),
                f"built-in X * Y, {mode}",
                lambda f=before: f(a, b),
                2000,
            )
        x, y = pt.dvector("x"), pt.dvector("y")
        ours, before = jax_functions(op, [x, y])
        big = [jax.numpy.asarray(rng.random((10_000, 3))) for _ in range(2)]
        builtin = jax.jit(jax.vmap(lambda p, q: p * q))
        assert np.array_equal(np.asarray(ours(*big)), np.asarray(builtin(*big)))
        row(
            f"{name}, JAX, jit(vmap), 10,000 rows",
            "<= 1.5x" if name == "undeclared" else target,
            lambda f=ours: f(*big).block_until_ready(),
            lambda: builtin(*big).block_until_ready(),
            "built-in x * y, jit(vmap)",
            lambda f=before: f(*big).block_until_ready(),
            200,
        )

    # The real op: 64 solves, against the sum of 64 single calls of its compiled op.
    P, Y0 = pt.dmatrix("P"), pt.dmatrix("Y0")
    params = np.column_stack([rng.uniform(0.5, 2, 64), rng.uniform(0, 0.3, 64), rng.random(64)])
    starts = rng.normal(size=(64, 2))
    # The node's own module, as the batch runs it (the drop-in's flags, not build()'s).
    single = compile_node(ode_op(pt.dvector(), pt.dvector()).owner)
    expected = np.stack([single(p, s) for p, s in zip(params, starts, strict=True)])

    def singles():
        for p, s in zip(params, starts, strict=True):
            single(p, s)

    for mode in ("CVM", "NUMBA"):
        ours, before, _ = pytensor_functions(ode_op, [P, Y0], None, mode)
        assert np.array_equal(ours(params, starts), expected)
        row(
            f"ODE solve, {mode}, vectorize_graph, 64 rows",
            "<= 1.05x",
            lambda f=ours: f(params, starts),
            singles,
            "64 single calls of the compiled op",
            lambda f=before: f(params, starts),
            20,
        )
    p, y0 = pt.dvector("p"), pt.dvector("y0")
    ours, before = jax_functions(ode_op, [p, y0])
    jp, js = jax.numpy.asarray(params), jax.numpy.asarray(starts)
    assert np.array_equal(np.asarray(ours(jp, js)), expected)
    row(
        "ODE solve, JAX, jit(vmap), 64 rows",
        "<= 1.05x",
        lambda: ours(jp, js).block_until_ready(),
        singles,
        "64 single calls of the compiled op",
        lambda: before(jp, js).block_until_ready(),
        20,
    )

    print(
        f"PyTensor {pytensor.__version__}, JAX {jax.__version__}, CPU time per call, best of "
        f"{args.reps}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print("| measure | ours | reference | | ratio | target | before |")
    print("|---|---|---|---|---|---|---|")
    for label, t_ours, t_ref, ref_label, ratio, target, before in rows:
        print(
            f"| {label} | {fmt_time(t_ours)} | {fmt_time(t_ref)} | {ref_label} | {ratio:.2f}x | "
            f"{target} | {before:.1f}x |"
        )


if __name__ == "__main__":
    main()
