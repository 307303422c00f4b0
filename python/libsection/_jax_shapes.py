"""The shapes of a drop-in node's outputs in JAX, which XLA allocates before the C code runs:
the outputs' static shapes, else the op's ``infer_shape`` evaluated on the input shapes, once
per input-shape signature while JAX traces.
"""

from __future__ import annotations

import numpy as np

from ._memo import Lru
from ._protocol import call_infer_shape

__all__ = ["shape_function"]


def shape_function(node):
    """(input shapes) -> output shapes: the outputs' static shapes when complete, else the
    op's ``infer_shape`` evaluated on the input shapes (memoised per input-shape signature)."""
    static = [getattr(v.type, "shape", ()) for v in node.outputs]
    if all(s is not None for shape in static for s in shape):
        return lambda in_shapes: [tuple(s) for s in static]
    op = node.op
    if not hasattr(op, "infer_shape"):
        unknown = [j for j, shape in enumerate(static) if any(s is None for s in shape)]
        raise NotImplementedError(
            f"libsection: JAX needs the shapes of {type(op).__name__}'s outputs {unknown} before "
            f"running it: define infer_shape(self, fgraph, node, input_shapes) on "
            f"{type(op).__name__}, or give its outputs static shapes"
        )
    memo: Lru[tuple, list[tuple[int, ...]]] = Lru(256)  # bounded: a shape per batch size

    def output_shapes(in_shapes):
        key = tuple(tuple(int(d) for d in s) for s in in_shapes)
        return memo.get_or_make(key, lambda: _infer(node, key))

    return output_shapes


def _infer(node, in_shapes) -> list[tuple[int, ...]]:
    import pytensor
    import pytensor.tensor as pt
    from pytensor.compile.mode import Mode

    symbolic = [tuple(pt.constant(d, dtype="int64") for d in s) for s in in_shapes]
    shapes = [tuple(shape) for shape in call_infer_shape(node, symbolic)]
    dims = [d for shape in shapes for d in shape if not isinstance(d, (int, np.integer))]
    values = (
        pytensor.function([], dims, mode=Mode(linker="py", optimizer="fast_compile"))()
        if dims
        else []
    )
    evaluated = dict(zip(map(id, dims), values, strict=True))
    return [tuple(int(evaluated.get(id(d), d)) for d in shape) for shape in shapes]
