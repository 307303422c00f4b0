"""``libsection.ExternalCOp``: an op from ``#section`` files, called on NumPy arrays, no PyTensor.

::

    class VectorTimesVector(libsection.ExternalCOp):
        func_files = ["vectorTimesVector.c"]            # relative to this Python file
        func_name = "APPLY_SPECIFIC(vector_times_vector)"

        def output_types(self, x, y):                   # type strings in, type strings out
            return [libsection.tensor(libsection.upcast(x, y), 1)]

    VectorTimesVector()(np.ones(3), np.arange(3.0))

The first call with new input types builds the module (once; it is cached on disk, so a new
process loads it without compiling); later calls go straight to C.
"""

from __future__ import annotations

import inspect
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import _core
from ._build import build

__all__ = ["ExternalCOp", "tensor", "type_of", "upcast"]

log = logging.getLogger("libsection")


def tensor(dtype: str | np.dtype, ndim: int) -> str:
    """The type string of a tensor: ``tensor("float64", 2) == "float64[:,:]"``,
    ``tensor("float64", 0) == "float64[]"`` (a 0-d array)."""
    return f"{np.dtype(dtype).name}[{','.join(':' * ndim)}]"


def upcast(*type_strings: str) -> str:
    """NumPy's result dtype of the given types' dtypes (PyTensor's ``upcast`` for arrays)."""
    return np.result_type(*(np.dtype(_core.parse_type(t).dtype) for t in type_strings)).name


def type_of(value: Any) -> str:
    """The type string a value is passed as: arrays are tensors (0-d ones ``float64[]``),
    Python and NumPy numbers scalars."""
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
    raise TypeError(f"cannot pass a {type(value).__name__} to an op: give a NumPy array or a number")


class ExternalCOp:
    """Base class for ops whose C implementation lives in ``#section`` files.

    Subclasses set ``func_files`` (a path or list of paths, relative to the file defining the
    subclass) and ``func_name`` (or pass them to the constructor, as PyTensor's ExternalCOp
    takes them), and define ``output_types``. Optional class attributes: ``_cop_num_inputs`` /
    ``_cop_num_outputs`` (NULL padding of the call), ``check_input`` (dtype macros), and
    ``params``, a ``{field: type string}`` dict whose values are the instance's attributes of
    those names, seen by the C code as ``params->field``.
    """

    func_files: str | Path | list[str | Path] = ()
    func_name: str | None = None
    _cop_num_inputs: int | None = None
    _cop_num_outputs: int | None = None
    check_input: bool = True
    params: dict[str, str] = {}

    def __init__(self, func_files=None, func_name: str | None = None) -> None:
        files = self.func_files if func_files is None else func_files
        if isinstance(files, (str, Path)):
            files = [files]
        if not files:
            raise ValueError(f"{type(self).__name__}: no section files (set func_files)")
        self.func_files = [Path(f) for f in files]
        if func_name is not None:
            self.func_name = func_name
        self._compiled: dict[tuple, Any] = {}

    def output_types(self, *input_types: str) -> list[str]:
        """The output type strings for these input type strings (``"float64[:]"``, ``"int64"``)."""
        raise NotImplementedError(f"{type(self).__name__} must define output_types()")

    @classmethod
    def get_path(cls, f: Path) -> Path:
        """Resolves a relative path against the directory of the file that defines ``cls``."""
        if f.is_absolute():
            return f
        return (Path(inspect.getfile(cls)).parent / f).resolve()

    def _params(self) -> dict[str, tuple[str, Any]]:
        missing = [name for name in self.params if not hasattr(self, name)]
        if missing:
            raise AttributeError(f"{type(self).__name__}: missing params attributes {missing}")
        return {name: (type_, getattr(self, name)) for name, type_ in self.params.items()}

    def compiled(self, *input_types: str):
        """The compiled op for these input types: built once, then reused."""
        params = self._params()
        key = (input_types, tuple((k, t, _hashable(v)) for k, (t, v) in params.items()))
        op = self._compiled.get(key)
        if op is None:
            outputs = list(self.output_types(*input_types))
            start = time.perf_counter()
            op = build([self.get_path(f) for f in self.func_files], self.func_name,
                       list(input_types), outputs, params or None, name=type(self).__name__,
                       num_inputs=self._cop_num_inputs, num_outputs=self._cop_num_outputs,
                       check_input=bool(self.check_input))
            # Compiling is worth a line; loading a cached module is not, unless asked.
            level = logging.INFO if op.info.get("compiled") else logging.DEBUG
            log.log(level, "%s(%s) -> %s: %s in %.3f s", type(self).__name__,
                    ", ".join(input_types), ", ".join(outputs),
                    "compiled" if op.info.get("compiled") else "loaded from cache",
                    time.perf_counter() - start)
            self._compiled[key] = op
        return op

    def __call__(self, *inputs: Any):
        return self.compiled(*(type_of(v) for v in inputs))(*inputs)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_compiled"}  # no C handles

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._compiled = {}


def _hashable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    return value
