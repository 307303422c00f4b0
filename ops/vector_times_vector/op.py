"""VectorTimesVector: PyTensor's COp tutorial op, z = x * y elementwise for two vectors."""

import libsection
from libsection import tensor, upcast


class VectorTimesVector(libsection.ExternalCOp):
    func_files = ["vectorTimesVector.c"]
    func_name = "APPLY_SPECIFIC(vector_times_vector)"
    gufunc_signature = "(n),(n)->(n)"  # arrays with leading batch dimensions run row by row

    def output_types(self, x, y):
        return [tensor(upcast(x, y), 1)]
