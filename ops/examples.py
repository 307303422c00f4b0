"""The example ops of ops/, with inputs to run them on and what NumPy says they compute.

Used by the tests and by the main job (`python -m libsection run`)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

OPS_DIR = Path(__file__).resolve().parent


def load_op_module(folder: str):
    """Imports ops/<folder>/op.py as module `ops_<folder>` (registered, so paths resolve)."""
    name = f"ops_{folder}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, OPS_DIR / folder / "op.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@dataclass
class Example:
    folder: str
    make: Callable[[Any], Any]  # module -> op instance
    inputs: Callable[[], tuple]  # fresh inputs
    expected: Callable[..., Any]  # NumPy reference on the same inputs
    strides: bool = True  # the op takes every other element of its inputs (not fixed lengths)

    def op(self):
        return self.make(load_op_module(self.folder))


rng = np.random.default_rng(0)
X = rng.normal(size=7)
Y = rng.normal(size=7)


def ode_solve(p, y0, steps=100, dt=0.01):
    """ops/ode_solve in NumPy: `steps` Runge-Kutta steps of the driven, damped oscillator."""
    omega, zeta, force = p

    def f(t, y):
        return np.array([y[1], force * np.sin(t) - 2.0 * zeta * omega * y[1] - omega**2 * y[0]])

    y = np.array(y0, dtype=float)
    for n in range(steps):
        t = n * dt
        k1 = f(t, y)
        k2 = f(t + 0.5 * dt, y + 0.5 * dt * k1)
        k3 = f(t + 0.5 * dt, y + 0.5 * dt * k2)
        k4 = f(t + dt, y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y


EXAMPLES = [
    Example(
        "vector_times_vector", lambda m: m.VectorTimesVector(), lambda: (X, Y), lambda x, y: x * y
    ),
    Example(
        "vector_times_scalar", lambda m: m.VectorTimesScalar(), lambda: (X, 2.5), lambda x, a: x * a
    ),
    Example(
        "sum_and_difference",
        lambda m: m.SumAndDifference(),
        lambda: (X, Y),
        lambda x, y: (x + y, x - y),
    ),
    Example(
        "scale_shift", lambda m: m.ScaleShift(3.0, -1.0), lambda: (X,), lambda x: x * 3.0 - 1.0
    ),
    Example("running_max", lambda m: m.RunningMax(), lambda: (X,), np.maximum.accumulate),
    Example("sum_up_to_three", lambda m: m.SumUpToThree(), lambda: (X, Y), lambda x, y: x + y),
    Example("square", lambda m: m.Square(), lambda: (X,), lambda x: x * x),
    Example("checked_log", lambda m: m.CheckedLog(), lambda: (np.abs(X) + 0.5,), np.log),
    Example("batch_times_batch", lambda m: m.BatchTimesBatch(), lambda: (X, Y), lambda x, y: x * y),
    Example(
        "ode_solve",
        lambda m: m.OdeSolve(steps=100, dt=0.01),
        lambda: (np.array([1.5, 0.1, 0.3]), np.array([1.0, -0.5])),
        ode_solve,
        strides=False,  # p and y0 have fixed lengths, 3 and 2
    ),
]
