"""ScaleShift: z = x * scale + shift, with scale and shift passed to C as op params."""

import libsection
from libsection import tensor, upcast


class ScaleShift(libsection.ExternalCOp):
    func_files = ["scaleShift.c"]
    func_name = "APPLY_SPECIFIC(scale_shift)"
    gufunc_signature = "(n)->(n)"  # arrays with leading batch dimensions run row by row
    params = {"scale": "float64", "shift": "float64"}

    def __init__(self, scale: float, shift: float):
        super().__init__()
        self.scale, self.shift = float(scale), float(shift)

    def output_types(self, x):
        return [tensor(upcast(x, "float64"), 1)]
