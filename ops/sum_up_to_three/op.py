"""SumUpToThree: x + y (+ w); applied to two inputs, the C function gets NULL for the third."""

import libsection


class SumUpToThree(libsection.ExternalCOp):
    func_files = ["sumUpToThree.c"]
    func_name = "APPLY_SPECIFIC(sum_up_to_three)"
    _cop_num_inputs = 3

    def output_types(self, *inputs):
        if not 2 <= len(inputs) <= 3 or any(t != "float64[:]" for t in inputs):
            raise TypeError(f"SumUpToThree takes two or three float64 vectors, got {inputs}")
        return ["float64[:]"]
