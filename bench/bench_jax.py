"""JAX benchmark: a drop-in op as an XLA FFI call against JAX's own built-ins, in one run.

    python bench/bench_jax.py [--reps N]

The op is the tutorial's VectorTimesVector (ops/vector_times_vector), converted by PyTensor's
jax_funcify and jitted. Rows (targets from issues #20 and #34):
  * n = 3: the op's jitted call against the jitted built-in `x * y` (<= 1.5x);
  * n = 10^6: the op's jitted call against the op's own CVM call (<= 1.1x);
  * vmap over 1,000 calls of n = 3: against the built-in's vmap (<= 2x);
  * a sampler's step: `jax.jit(jax.value_and_grad(logp))` of a PyMC model's log-density (PyMC's
    get_jaxified_logp, what numpyro and blackjax differentiate), the model whose likelihood is
    a C op with a C gradient op against the same model in built-ins: bench_samplers.py's
    "density" (10^4 points) and "filter" (1,000 steps, the built-in twin a scan) models.
Each op row also shows the op through `jax.pure_callback` (used when the handler cannot be
built). Times are the best of interleaved repeats of CPU time (time.process_time: every thread
of this process, no other process's load).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from timefmt import fmt_time  # bench/ is the script's own folder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_backends import make_op_class  # noqa: E402


def per_call(fn, number: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    args, _ = parser.parse_known_args()  # ./dev bench hands every benchmark the same options

    import os

    os.environ.setdefault("LIBSECTION_CACHE_DIR", tempfile.mkdtemp(prefix="bench-jax-"))
    import jax
    import numpy as np
    import pytensor
    import pytensor.tensor as pt
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    from libsection import _jax_ffi

    op = make_op_class()()
    x, y = pt.dvector("x"), pt.dvector("y")

    def converted():
        fgraph = FunctionGraph([x, y], [op(x, y)], clone=True)
        get_mode("JAX").optimizer(fgraph)
        fn = jax_funcify(fgraph)
        return lambda a, b: fn(a, b)[0]

    ffi = converted()
    ready = _jax_ffi.target_ready
    _jax_ffi.target_ready = lambda: False  # the callback path, for the "before" column
    callback = converted()
    _jax_ffi.target_ready = ready
    builtin = lambda a, b: a * b  # noqa: E731
    cvm = pytensor.function([x, y], op(x, y), mode="CVM")

    rows = []

    def row(label, ours, reference, ref_label, target, before, number):
        for f in (ours, reference, before):
            f()  # compile and warm up
        t_ours = per_call(ours, number, args.reps)
        t_ref = per_call(reference, number, args.reps)
        t_before = per_call(before, max(1, number // 10), args.reps)
        rows.append((label, t_ours, t_ref, ref_label, t_ours / t_ref, target, t_before / t_ref))

    small = [jax.numpy.asarray(np.random.rand(3)) for _ in range(2)]
    jf, jb, jc = jax.jit(ffi), jax.jit(builtin), jax.jit(callback)
    row(
        "jitted call, n = 3",
        lambda: jf(*small).block_until_ready(),
        lambda: jb(*small).block_until_ready(),
        "built-in x * y, jitted",
        "<= 1.5x",
        lambda: jc(*small).block_until_ready(),
        2000,
    )
    big = [np.random.rand(10**6) for _ in range(2)]
    big_j = [jax.numpy.asarray(a) for a in big]
    row(
        "jitted call, n = 10^6",
        lambda: jf(*big_j).block_until_ready(),
        lambda: cvm(*big),
        "the op's CVM call",
        "<= 1.1x",
        lambda: jc(*big_j).block_until_ready(),
        20,
    )
    batch = [jax.numpy.asarray(np.random.rand(1000, 3)) for _ in range(2)]
    vf, vb, vc = jax.jit(jax.vmap(ffi)), jax.jit(jax.vmap(builtin)), jax.jit(jax.vmap(callback))
    row(
        "vmap, 1,000 calls of n = 3",
        lambda: vf(*batch).block_until_ready(),
        lambda: vb(*batch).block_until_ready(),
        "built-in x * y, vmap",
        "<= 2x",
        lambda: vc(*batch).block_until_ready(),
        200,
    )

    logp_rows(rows, args.reps)

    print(
        f"JAX {jax.__version__}, PyTensor {pytensor.__version__}, CPU time per call, "
        f"best of {args.reps}"
    )
    header = ("measure", "op (FFI)", "reference", "", "ratio", "target", "pure_callback ratio")
    print(" | ".join(header))
    for label, ours, ref, ref_label, ratio, target, before in rows:
        before_text = "" if before is None else f"{before:.1f}x"
        print(
            f"{label} | {fmt_time(ours)} | {fmt_time(ref)} | {ref_label} | {ratio:.2f}x | "
            f"{target} | {before_text}"
        )


def logp_rows(rows, reps: int) -> None:
    """The sampler's step: jit(value_and_grad(logp)) of each model, the op's against the
    built-in twin's, at the same point."""
    import jax
    import numpy as np
    from bench_samplers import density_models, filter_models
    from pymc.sampling.jax import get_jaxified_logp

    for label, built, reference in (
        ("density, 10^4 points", density_models(10**4), "built-in"),
        ("filter, 1,000 steps", filter_models(1000), "built-in scan"),
    ):
        steps = {}
        for name, model in built.items():
            logp = get_jaxified_logp(model)
            point = [np.asarray(v) for v in model.initial_point().values()]
            step = jax.jit(jax.value_and_grad(logp))
            jax.block_until_ready(step(point))  # compile
            steps[name] = lambda step=step, point=point: jax.block_until_ready(step(point))
        ours, ref = steps["C op"], steps[reference]
        t_ours = t_ref = float("inf")
        for _ in range(2):  # interleaved
            t_ours = min(t_ours, per_call(ours, 200, reps))
            t_ref = min(t_ref, per_call(ref, 200, reps))
        rows.append(
            (
                f"jit(value_and_grad(logp)), {label}",
                t_ours,
                t_ref,
                f"the {reference} model's",
                t_ours / t_ref,
                "as before",
                None,
            )
        )


if __name__ == "__main__":
    main()
