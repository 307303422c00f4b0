"""OdeSolve: the state of a damped, driven oscillator after a fixed number of Runge-Kutta steps,
one solve per row of a batch (its gufunc_signature): p = (omega, zeta, force), y0 = (position,
velocity)."""

import libsection
from libsection import tensor


class OdeSolve(libsection.ExternalCOp):
    func_files = ["odeSolve.c"]
    func_name = "APPLY_SPECIFIC(ode_solve)"
    params = {"steps": "int64", "dt": "float64"}
    gufunc_signature = "(3),(2)->(2)"

    def __init__(self, steps: int = 1000, dt: float = 0.01):
        super().__init__()
        self.steps, self.dt = int(steps), float(dt)

    def output_types(self, p, y0):
        return [tensor("float64", 1)]

    def infer_shape(self, node, shapes):  # for PyTensor and JAX (through pytensor_op)
        return [(2,)]
