"""VectorTimesScalar: z = x * a for a vector x and a scalar a."""

import libsection
from libsection import tensor, upcast


class VectorTimesScalar(libsection.ExternalCOp):
    func_files = ["vectorTimesScalar.c"]
    func_name = "APPLY_SPECIFIC(vector_times_scalar)"
    gufunc_signature = "(n),()->(n)"  # arrays with leading batch dimensions run row by row

    def output_types(self, x, a):
        return [tensor(upcast(x, a), 1)]
