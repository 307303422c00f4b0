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
    """The type string of a tensor.

    Args:
        dtype: A NumPy dtype or its name (``"float64"``, ``np.float32``).
        ndim: The number of dimensions; 0 is a 0-d array.

    Returns:
        The type string, as ``build()`` and ``output_types`` take it.

    Raises:
        TypeError: ``dtype`` is not a NumPy dtype.

    Examples:
        >>> import libsection
        >>> libsection.tensor("float64", 2)
        'float64[:,:]'
        >>> libsection.tensor("float32", 0)
        'float32[]'
    """
    return f"{np.dtype(dtype).name}[{','.join(':' * ndim)}]"


def ndim(type_string: str) -> int:
    """The number of dimensions of a type, for ``output_types`` to refuse inputs the C code
    cannot take.

    Args:
        type_string: A type string (``"float64[:,:]"``, ``"int64"``, ``"object"``).

    Returns:
        The tensor's number of dimensions; 0 for scalars and ``object``.

    Raises:
        ValueError: ``type_string`` is not a type string.

    Examples:
        >>> import libsection
        >>> libsection.ndim("float64[:,:]")
        2
        >>> libsection.ndim("int64")
        0
    """
    return int(_core.parse_type(type_string).ndim)


def upcast(*type_strings: str) -> str:
    """NumPy's result dtype of the given types' dtypes (PyTensor's ``upcast`` for arrays).

    Args:
        *type_strings: Type strings (``"float32[:]"``, ``"int64"``).

    Returns:
        The dtype's name, for ``tensor()``.

    Raises:
        ValueError: One of them is not a type string.

    Examples:
        >>> import libsection
        >>> libsection.upcast("float32[:]", "int64")
        'float64'
        >>> libsection.tensor(libsection.upcast("float32[:]", "float32"), 1)
        'float32[:]'
    """
    return np.result_type(*(np.dtype(_core.parse_type(t).dtype) for t in type_strings)).name


def type_of(value: Any) -> str:
    """The type string a value is passed to an op as.

    Args:
        value: A NumPy array (a tensor; a 0-d one is ``float64[]``) or a Python or NumPy number
            (a scalar: Python ``int`` is ``int64``, ``float`` is ``float64``, ``bool`` is
            ``bool``).

    Returns:
        Its type string.

    Raises:
        TypeError: ``value`` is neither an array nor a number.

    Examples:
        >>> import numpy as np, libsection
        >>> libsection.type_of(np.ones((2, 3), dtype=np.float32))
        'float32[:,:]'
        >>> libsection.type_of(3)
        'int64'
    """
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
