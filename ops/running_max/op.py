"""RunningMax: z[i] = max(x[:i+1]), computed in a scratch buffer kept in the op's struct."""

import libsection


class RunningMax(libsection.ExternalCOp):
    func_files = ["runningMax.c"]
    func_name = "APPLY_SPECIFIC(running_max)"

    def output_types(self, x):
        return [x]
