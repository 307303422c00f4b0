"""Square: z = x * x, written as a `code` section (no function name)."""

import libsection


class Square(libsection.ExternalCOp):
    func_files = ["square.c"]

    def output_types(self, x):
        return [x]
