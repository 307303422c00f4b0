"""CheckedLog: z = log(x), raising ValueError naming the first element that is not positive."""

import libsection
from libsection import tensor, upcast


class CheckedLog(libsection.ExternalCOp):
    func_files = ["checkedLog.c"]
    func_name = "APPLY_SPECIFIC(checked_log)"

    def output_types(self, x):
        return [tensor(upcast(x, "float64"), 1)]
