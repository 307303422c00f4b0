"""CheckedLog: z = log(x), raising ValueError naming the first element that is not positive."""

import libsection
from libsection import tensor, upcast


class CheckedLog(libsection.ExternalCOp):
    func_files = ["checkedLog.c"]
    func_name = "APPLY_SPECIFIC(checked_log)"
    gufunc_signature = "(n)->(n)"  # arrays with leading batch dimensions run row by row

    def output_types(self, x):
        return [tensor(upcast(x, "float64"), 1)]

    def infer_shape(self, node, shapes):  # for PyTensor and JAX (through pytensor_op)
        return [shapes[0]]
