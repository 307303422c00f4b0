"""PyTensor's protocol, each fact stated once: the names of an op's methods, their conventions
in the installed PyTensor, and what its classes keep private that libsection reads.

Every layer of the package asks here: the standalone op (which ``c_*`` methods it honours),
the node machinery (which methods the linker core asks a node's op for), the drop-in, the
derived gradients and the batched nodes (gradient names, ``infer_shape``'s convention,
``Blockwise``'s internals). PyTensor is imported only by the functions that need it, so the
standalone op, which runs without PyTensor, can read the names.
"""

from __future__ import annotations

import dis
import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from . import _core
from ._memo import WeakMemo, once

__all__ = [
    "BUILD_METHODS",
    "CODE_METHODS",
    "GRADIENT_METHODS",
    "NODE_METHODS",
    "PUSHFORWARD_METHODS",
    "RESHAPING_METHODS",
    "PerNode",
    "blockwise_batch_ndim",
    "blockwise_check_broadcast",
    "blockwise_core_node",
    "call_infer_shape",
    "call_own_infer_shape",
    "dtype_of",
    "gradient_method",
    "has_pullback",
    "infer_shape_arguments",
    "own_method",
    "perform_only_raises",
    "tensors_only",
]

# ---- the c_* methods ----------------------------------------------------------------------

CODE_METHODS: tuple[str, ...] = tuple(method.name for method in _core.expansion_methods())
"""The methods that give an op's C code, one per section tag (``c_code``, ``c_support_code``,
...): the linker core's own table of them."""
BUILD_METHODS = ("c_compile_args", "c_header_dirs", "c_libraries", "c_lib_dirs", "c_headers")
"""The methods that give what an op adds to its module's build: flags, folders, libraries,
headers."""
NODE_METHODS = (*CODE_METHODS, *BUILD_METHODS)
"""What the linker core asks a node's op for (``c_*(node, ...)``, minus ``node``)."""
RESHAPING_METHODS = ("get_c_macros", "format_c_function_args")
"""``ExternalCOp``'s methods whose override reshapes every string of an expansion."""

# ---- gradients ------------------------------------------------------------------------------

GRADIENT_METHODS = ("pullback", "L_op", "grad")
"""An op's gradient, by each of PyTensor's names for it, the newest first: ``pullback``
(PyTensor 3.3), ``L_op`` (``(inputs, outputs, cotangents)``), ``grad`` (``(inputs,
cotangents)``)."""
PUSHFORWARD_METHODS = ("pushforward", "R_op")
"""An op's Jacobian-vector product: ``pushforward`` (PyTensor 3.3), ``R_op``."""


@once
def has_pullback() -> bool:
    """Whether the installed PyTensor asks an op for ``pullback`` (3.3 on), not ``L_op``."""
    from pytensor.graph.op import Op

    return hasattr(Op, "pullback")


def gradient_method() -> str:
    """The name the installed PyTensor asks an op's gradient by."""
    return "pullback" if has_pullback() else "L_op"


def own_method(op: Any, name: str, *ours: type) -> Callable[..., Any] | None:
    """``op``'s ``name`` method (bound) when its class defines one of its own: not PyTensor's
    ``Op`` default, nor that of any class in ``ours`` (libsection's own base classes)."""
    from pytensor.graph.op import Op

    method = getattr(type(op), name, None)
    if method is None or method is getattr(Op, name, None):
        return None
    if any(method is getattr(base, name, None) for base in ours):
        return None
    return getattr(op, name)


def perform_only_raises(method: Any) -> bool:
    """Whether a ``perform`` is the stub PyTensor's abstract ``perform`` makes C-only ops write
    (``raise NotImplementedError``, or PyTensor's ``MethodNotDefined``): its code raises one of
    those and has no way to return, so it is no Python implementation. A perform that raises
    anything else is the op's own behaviour (an error it means to give). Read from the
    bytecode, which needs no source file."""
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    if code is None:
        return False
    if not {"NotImplementedError", "MethodNotDefined"} & set(code.co_names):
        return False
    names = {instruction.opname for instruction in dis.get_instructions(code)}
    ends = {"RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE"}
    return "RAISE_VARARGS" in names and not names & ends


# ---- shapes ---------------------------------------------------------------------------------


@once
def _infer_shape_takes_fgraph() -> bool:
    from pytensor.tensor.elemwise import Elemwise

    return "fgraph" in inspect.signature(Elemwise.infer_shape).parameters


def call_infer_shape(node: Any, shapes: list) -> list:
    """``node.op.infer_shape`` in the installed PyTensor's convention: ``(node, shapes)``
    since 3.3 (which wraps older methods), ``(fgraph, node, shapes)`` before."""
    if _infer_shape_takes_fgraph():
        return node.op.infer_shape(None, node, shapes)
    return node.op.infer_shape(node, shapes)


def infer_shape_arguments(args: tuple) -> tuple[Any, Any, Any]:
    """``(fgraph, node, shapes)`` from the arguments PyTensor passes ``infer_shape``:
    ``(fgraph, node, shapes)`` before 3.3, ``(node, shapes)`` from 3.3 on (fgraph None)."""
    fgraph, node, shapes = args if len(args) == 3 else (None, *args)
    return fgraph, node, shapes


def call_own_infer_shape(method: Callable[..., Any], fgraph: Any, node: Any, shapes: Any) -> Any:
    """An ``infer_shape`` method in whichever convention it is written: ``(fgraph, node,
    shapes)`` (PyTensor before 3.3) or ``(node, shapes)`` (3.3 on)."""
    positional: list[Any]
    try:
        positional = [
            p
            for p in inspect.signature(method).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        positional = [None] * 3
    return method(node, shapes) if len(positional) == 2 else method(fgraph, node, shapes)


# ---- variables -------------------------------------------------------------------------------


def dtype_of(variable: Any) -> str | None:
    """A variable's dtype; None for types without one (generic, params)."""
    from pytensor.graph.type import HasDataType

    return variable.type.dtype if isinstance(variable.type, HasDataType) else None


def tensors_only(node: Any) -> bool:
    """Whether every input and output of ``node`` is a PyTensor tensor: the types a module's
    batch entry takes (a ``ScalarType``, a generic object do not have one)."""
    from pytensor.tensor.type import TensorType

    return all(isinstance(v.type, TensorType) for v in [*node.inputs, *node.outputs])


# ---- Blockwise's internals --------------------------------------------------------------------


def blockwise_core_node(blockwise: Any, node: Any) -> Any:
    """The node of ``blockwise``'s core op that one row of ``node`` (a node of the same
    inputs) is."""
    return blockwise._create_dummy_core_node(node.inputs)


def blockwise_batch_ndim(blockwise: Any, node: Any) -> int:
    """The number of batch dimensions of ``node``'s rows: its first output's dimensions beyond
    the core ones."""
    return node.outputs[0].type.ndim - len(blockwise.outputs_sig[0])


def blockwise_check_broadcast(blockwise: Any, node: Any, inputs: Any) -> None:
    """Raises, as ``Blockwise`` does, for a batch dimension of length 1 that the node's types
    do not say may broadcast."""
    blockwise._check_runtime_broadcast(node, inputs)


# ---- perform called directly -------------------------------------------------------------------

T = TypeVar("T")


class PerNode(Generic[T]):
    """What an op's ``perform`` runs when it is called directly (not through a thunk, which
    makes its own): one instance per node, made on the first call and kept as long as the node
    lives."""

    __slots__ = ("_made", "_make")

    def __init__(self, make: Callable[[Any], T]) -> None:
        self._make = make
        self._made: WeakMemo[Any, T] = WeakMemo()

    def __call__(self, node: Any) -> T:
        return self._made.get_or_make(node, lambda: self._make(node))
