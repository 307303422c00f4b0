"""SumAndDifference: two outputs, x + y and x - y."""

import libsection
from libsection import tensor, upcast


class SumAndDifference(libsection.ExternalCOp):
    func_files = ["sumAndDifference.c"]
    func_name = "APPLY_SPECIFIC(sum_and_difference)"

    def output_types(self, x, y):
        out = tensor(upcast(x, y), 1)
        return [out, out]
