"""Batches in one C loop: an op's C code over every row of inputs with leading batch dimensions.

A signature in NumPy's generalized-ufunc form, ``"(n),(n)->(n)"`` (PyTensor's
``gufunc_signature``, or the one ``Blockwise`` is given), says which trailing dimensions of
each input and output are the op's own (its core); the leading ones are the batch, broadcast
together as NumPy broadcasts a gufunc's. ``_core.Batched`` runs a compiled op's module over the
rows of such a batch in one C loop (its batch entry, libsection/src/linker/generate/batch.c):
the checks, the broadcast and the outputs are done once per batch, and each row costs the op's
own code and a move of its arrays' data pointers.

An op declares that its C code takes the batch itself, leading dimensions and all, with
``vmap_method = "broadcast_all"`` (JAX's name for that contract: every input broadcast to the
whole batch shape, one call); the default, ``"sequential"``, runs the op once per row.

The plan of a batch is the linker core's ``_core.BatchPlan`` (the signature's core dimensions,
the broadcast masks, the op's own batching), which batch.c reads. This module holds what every
backend shares (the signature, the standalone op's batched call, JAX's); ``_batched_pytensor``
puts batches into PyTensor's graphs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._memo import memoized

__all__ = [
    "VMAP_METHODS",
    "batched",
    "ffi_batch",
    "format_signature",
    "parse_signature",
    "standalone_call",
    "vmap_method",
]

VMAP_METHODS = ("sequential", "broadcast_all")


@memoized(256)
def parse_signature(
    signature: str,
) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """``"(m,n),(n)->(m)"`` as ``((("m", "n"), ("n",)), (("m",),))``: each input's and output's
    core dimensions, names or fixed lengths (``"3"``), as the linker core reads them.
    ``ValueError`` for anything else."""
    if not isinstance(signature, str):
        raise ValueError(f"not a gufunc signature: {signature!r} (it needs one '->')")
    return _core.parse_gufunc_signature(signature)


def format_signature(inputs, outputs) -> str:
    """``parse_signature`` undone: each input's and output's core dimensions (names or fixed
    lengths, as strings) as a signature, ``"(m,n),(n)->(m)"``."""

    def group(dims_list):
        return ",".join("(" + ",".join(dims) + ")" for dims in dims_list)

    return f"{group(inputs)}->{group(outputs)}"


def vmap_method(op: Any) -> str:
    """The op's ``vmap_method``: ``"sequential"`` (the default: its C code runs once per row)
    or ``"broadcast_all"`` (its C code takes the whole batch, every input broadcast to the batch
    shape). ``ValueError`` naming the op for anything else."""
    method = getattr(op, "vmap_method", "sequential")
    if method not in VMAP_METHODS:
        name = op.__name__ if isinstance(op, type) else type(op).__name__
        raise ValueError(
            f"{name}.vmap_method is {method!r}; libsection takes 'sequential' (the default: the "
            "C code runs once per row of a batch) or 'broadcast_all' (the C code takes the whole "
            "batch, every input broadcast to the batch shape)"
        )
    return method


def batched(compiled, signature: str, name: str, *, whole: bool = False, masks=None):
    """``compiled`` (a CompiledOp with a batch entry) over batches of ``signature``: a
    ``_core.Batched``, called with the batch's inputs. ``masks``: per input, the batch
    dimensions that may broadcast at run time (PyTensor's rule); None for NumPy's."""
    return _core.Batched(compiled, _core.BatchPlan(name, signature, whole, masks))


# ---------------------------------------------------------------- the standalone op


def standalone_call(op: Any, inputs: tuple) -> Any | None:
    """The standalone op's call for these inputs' types when it has a ``gufunc_signature``: a
    ``_core.Batched``, which the op's dispatcher keeps for their types, so that every call
    checks its arrays' core dimensions against the signature, as NumPy's gufuncs do (inputs
    without batch dimensions are a batch of one row, the op called on them as they are). None
    without a signature, or when the signature has no core dimension and no input a batch
    dimension (nothing to check: the op is called as it is)."""
    signature = getattr(op, "gufunc_signature", None)
    if signature is None:
        return None
    name = type(op).__name__
    core_in, core_out = parse_signature(signature)
    if len(core_in) != len(inputs):
        raise TypeError(
            f"{name} takes {len(core_in)} inputs (gufunc_signature {signature!r}), "
            f"got {len(inputs)}"
        )
    arrays = [np.asarray(v) for v in inputs]
    batch = any(a.ndim > len(dims) for a, dims in zip(arrays, core_in, strict=True))
    if not batch and not any(core_in + core_out):
        return None
    pairs = zip(inputs, core_in, strict=True)
    if not batch and any(d and not isinstance(v, np.ndarray) for v, d in pairs):
        return None  # a number where the op takes an array: the plain call's TypeError says so
    from ._types import tensor, type_of

    # Without a batch, each input is what it is in a plain call (a 0-d array stays one, a str
    # is the plain call's TypeError); a row of a "()" input is a number (as the op is called
    # on one), of the others an array.
    plain = None if batch else [type_of(v) for v in inputs]
    for i, (a, dims) in enumerate(zip(arrays, core_in, strict=True)):
        if a.ndim < len(dims):
            raise ValueError(
                f"{name}: input {i} has {a.ndim} dimensions; its core dimensions in the "
                f"gufunc_signature {signature!r} need {len(dims)}"
            )
    pairs = zip(arrays, core_in, strict=True)
    types = plain or [tensor(a.dtype, len(d)) if d else a.dtype.name for a, d in pairs]
    compiled = op.compiled(*types)
    for j, (described, dims) in enumerate(zip(compiled.info["outputs"], core_out, strict=True)):
        got = _core.parse_type(described).ndim
        if got != len(dims):
            raise ValueError(
                f"{name}.output_types gives output {j} {got} dimensions, but its core "
                f"dimensions in the gufunc_signature {signature!r} are {len(dims)}"
            )
    try:
        return batched(compiled, signature, name, whole=vmap_method(op) == "broadcast_all")
    except TypeError as e:
        raise TypeError(f"{name} cannot run a batch: {e}") from None


# ---------------------------------------------------------------- JAX


def ffi_batch(
    compiled, name: str, in_ndims: list[int], out_ndims: list[int], whole: bool
) -> Any | None:
    """The ``_core.Batched`` the JAX handler runs a vmapped call of ``compiled`` (the node of
    op ``name``, whose inputs and outputs have ``in_ndims`` and ``out_ndims`` dimensions) with:
    one C loop, or one call when ``whole`` (an op whose ``vmap_method`` is ``"broadcast_all"``);
    None when the module has no batch entry (then the handler calls the op per batch element).
    The batch is JAX's, already broadcast: its plan names each core dimension apart."""
    plan = _core.BatchPlan.of_ranks(name, list(in_ndims), list(out_ndims), whole)
    try:
        return _core.Batched(compiled, plan)
    except TypeError:  # no batch entry: an input or output the runtime cannot give a row of
        return None
