"""Drop-in ops for the JAX transformation tests (test_jax_transforms.py and the scripts it
runs in fresh processes). The C files are in data/jax/ and data/backends/."""

from __future__ import annotations

import pytensor.tensor as pt
from backend_ops import GRADIENT
from pytensor.graph.basic import Apply
from pytensor.tensor import as_tensor_variable

from libsection.pytensor import ExternalCOp


class Kepler(ExternalCOp):
    """E solving M = E - e sin(E) elementwise (M float64 of any rank, e a float64 0-d
    tensor); a ValueError for e outside [0, 1). Its gradient is a PyTensor graph of its own
    output, so PyTensor differentiates it to any order."""

    __props__ = ()

    def __init__(self):
        super().__init__("data/jax/kepler.c", "APPLY_SPECIFIC(kepler)")

    def make_node(self, mean, ecc):
        mean = as_tensor_variable(mean).astype("float64")
        ecc = as_tensor_variable(ecc).astype("float64")
        return Apply(self, [mean, ecc], [mean.type()])

    def infer_shape(self, *args):
        return [args[-1][0]]

    def _gradient(self, inputs, outputs, cotangents):
        mean, ecc = inputs
        [E] = outputs
        [g] = cotangents
        slope = g / (1 - ecc * pt.cos(E))  # dE/dM = 1 / (1 - e cos E)
        return [slope, (slope * pt.sin(E)).sum()]  # dE/de = sin E / (1 - e cos E)


setattr(Kepler, GRADIENT, Kepler._gradient)


def kepler_reference(mean, ecc, xp, loop=True):
    """Kepler's equation solved with array operations of ``xp`` (NumPy or jax.numpy),
    differentiable by JAX itself: the reference for every transformation of the op. Eight
    Newton steps from ``M + e sin M`` reach the solution to rounding for e <= 0.7, and, Newton's
    step having a zero derivative at the solution, its derivatives of every order too. In JAX,
    a loop (``loop``), so that XLA compiles one step, not eight; unrolled where JAX's own
    loops fail (vmap of grad under a mesh of Explicit axes)."""

    def step(_, E):
        return E - (E - ecc * xp.sin(E) - mean) / (1 - ecc * xp.cos(E))

    E = mean + ecc * xp.sin(mean)
    if xp.__name__ == "numpy" or not loop:
        for i in range(8):
            E = step(i, E)
        return E
    import jax

    return jax.lax.fori_loop(0, 8, step, E)


def jaxify(kind, inputs, outputs):
    """The graph as a JAX function of its inputs (one output, or a tuple), as users get one:
    ``"mode"``, the jitted JAX function of ``pytensor.function(..., mode="JAX")``; ``"pymc"``,
    PyMC's ``get_jaxified_graph`` (what numpyro and blackjax take)."""
    import pytensor

    if kind == "mode":
        fn = pytensor.function(inputs, outputs, mode="JAX").vm.jit_fn
    else:
        from pymc.sampling.jax import get_jaxified_graph

        fn = get_jaxified_graph(inputs, outputs)
    if len(outputs) == 1:
        return lambda *args: fn(*args)[0]
    return lambda *args: tuple(fn(*args))
