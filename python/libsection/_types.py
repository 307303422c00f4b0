"""Type strings: the one place values and dtypes become libsection types.

``"float64[:]"`` is a 1-d tensor, ``"float32[:,:]"`` a 2-d one, ``"int64"`` a scalar and
``"object"`` any Python object; the compiled core parses them (``_core.parse_type``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core

__all__ = ["ndim", "tensor", "type_of", "upcast"]


def tensor(dtype: str | np.dtype, ndim: int) -> str:
    """The type string of a tensor: ``tensor("float64", 2) == "float64[:,:]"``,
    ``tensor("float64", 0) == "float64[]"`` (a 0-d array)."""
    return f"{np.dtype(dtype).name}[{','.join(':' * ndim)}]"


def ndim(type_string: str) -> int:
    """The number of dimensions of a type: ``ndim("float64[:,:]") == 2``; scalars and
    ``object`` have 0. For ``output_types`` to refuse inputs the C code cannot take."""
    return int(_core.parse_type(type_string).ndim)


def upcast(*type_strings: str) -> str:
    """NumPy's result dtype of the given types' dtypes (PyTensor's ``upcast`` for arrays)."""
    return np.result_type(*(np.dtype(_core.parse_type(t).dtype) for t in type_strings)).name


def type_of(value: Any) -> str:
    """The type string a value is passed as: arrays are tensors (0-d ones ``float64[]``),
    Python and NumPy numbers scalars (Python ``int`` is ``int64``, ``float`` is ``float64``,
    ``bool`` is ``bool``)."""
    if isinstance(value, np.ndarray):
        return tensor(value.dtype, value.ndim)
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, np.generic):
        return value.dtype.name
    raise TypeError(
        f"cannot pass a {type(value).__name__} to an op: give a NumPy array or a number"
    )
