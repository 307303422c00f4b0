"""BatchTimesBatch: z = x * y for arrays of one shape; its C code takes a whole batch at once
(vmap_method = "broadcast_all"), so every backend hands it the batch in one call."""

import libsection
from libsection import ndim, tensor, upcast


class BatchTimesBatch(libsection.ExternalCOp):
    func_files = ["batchTimesBatch.c"]
    func_name = "APPLY_SPECIFIC(batch_times_batch)"
    gufunc_signature = "(n),(n)->(n)"
    vmap_method = "broadcast_all"

    def output_types(self, x, y):
        return [tensor(upcast(x, y), ndim(x))]

    def infer_shape(self, node, shapes):  # for PyTensor and JAX (through pytensor_op)
        return [shapes[0]]
