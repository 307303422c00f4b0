"""Standalone ops for the batch tests (tests/python/test_batched.py), each with a
``gufunc_signature``; their C files are in data/batched/. In PyTensor they run through
``pytensor_op``, which carries the signature and ``vmap_method`` over."""

from __future__ import annotations

import libsection


class PlusNdim(libsection.ExternalCOp):
    """z = x + x.ndim: shows whether the C code got a row or the whole batch."""

    func_files = ["data/batched/plus_ndim.c"]
    func_name = "APPLY_SPECIFIC(plus_ndim)"
    gufunc_signature = "(n)->(n)"

    def output_types(self, x):
        return [x]

    def infer_shape(self, node, shapes):
        return [shapes[0]]


class PlusNdimWhole(PlusNdim):
    """PlusNdim whose C code takes the whole batch."""

    vmap_method = "broadcast_all"


class PlusPrevious(libsection.ExternalCOp):
    """z = x + the x of the instance's previous call: its struct keeps a reference to its input."""

    func_files = ["data/batched/plus_previous.c"]
    gufunc_signature = "(n)->(n)"

    def output_types(self, x):
        return [x]


class OwnOutput(libsection.ExternalCOp):
    """z = 2 x in an array of its own each call, one longer when x[0] < 0."""

    func_files = ["data/batched/own_output.c"]
    func_name = "APPLY_SPECIFIC(own_output)"
    gufunc_signature = "(n)->(n)"

    def output_types(self, x):
        return [x]


class OwnOutputUnnamed(OwnOutput):
    """OwnOutput whose signature does not give the output's length: the first row's sets it."""

    gufunc_signature = "(n)->(m)"


class AddRows(libsection.ExternalCOp):
    """z = x + y for vectors of one length: its C code trusts its signature's `n`."""

    func_files = ["data/batched/add_rows.c"]
    func_name = "APPLY_SPECIFIC(add_rows)"
    gufunc_signature = "(n),(n)->(n)"

    def output_types(self, x, y):
        return [x]


class Divmod0d(libsection.ExternalCOp):
    """q, r = divmod(x, y) on 0-d arrays, with no gufunc_signature: PyTensor's Blockwise (or
    `pt.vectorize`) gives it one."""

    func_files = ["data/batched/divmod_0d.c"]
    func_name = "APPLY_SPECIFIC(divmod_0d)"

    def output_types(self, x, y):
        return [x, x]


class TwiceNumber(libsection.ExternalCOp):
    """z = 2 x on numbers (a `code` section): in PyTensor its node has scalar types, which no
    batch entry takes, so a batch of it runs per element."""

    func_files = ["data/batched/twice_number.c"]

    def output_types(self, x):
        return [x]


class RowSum(libsection.ExternalCOp):
    """The sum of a vector, a number: "(n)->()"."""

    func_files = ["data/batched/row_sum.c"]
    gufunc_signature = "(n)->()"

    def output_types(self, x):
        return ["float64"]


class ScaleRow(libsection.ExternalCOp):
    """z = k x, "(n),()->(n)", whose C code takes k as a 0-d array."""

    func_files = ["data/batched/scale_row.c"]
    func_name = "APPLY_SPECIFIC(scale_row)"
    gufunc_signature = "(n),()->(n)"

    def output_types(self, x, k):
        return [x]


class CheckedLogUnnamed(libsection.ExternalCOp):
    """ops/checked_log (log x, a ValueError for x <= 0) whose signature leaves the output's
    length to the first row: a failing first row has made no output."""

    func_files = ["../../ops/checked_log/checkedLog.c"]
    func_name = "APPLY_SPECIFIC(checked_log)"
    gufunc_signature = "(n)->(m)"

    def output_types(self, x):
        return [x]
