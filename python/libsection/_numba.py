"""Numba (PyTensor's ``NUMBA`` mode and PyTensor 3's default ``FAST_RUN``) for drop-in ops, in
nopython mode.

Each node gets a Numba intrinsic that calls the node's compiled instance natively: it takes the
GIL, boxes the arguments the C code reads (its ``PyArrayObject*`` and NumPy scalars), calls the
CompiledOp's native entry (``_core.native_entry``: no Python call protocol), checks and unboxes
the outputs. An op whose class has its own ``perform`` runs that instead, as PyTensor would,
called from the same intrinsic (still no object-mode block). ``Blockwise`` loops call the same
function for each batch element.

The compiled function holds raw addresses (the instance, the entry, dtypes), so the
registration gives no cache key: PyTensor does not cache such graphs on disk, and Numba refuses
to cache functions that embed dynamic addresses. The instance lives as long as the Numba
function that calls it: the function object keeps it.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import _core
from ._memo import Lru
from ._node import NodeRunner, compile_node
from ._traceback import entry_point

# NumPy objects the generated code points at (dtypes, scalar types, ndarray): kept alive here,
# for good (compiled functions hold their addresses).
_pinned: Lru[int, object] = Lru(None)


def _address(obj) -> int:
    _pinned[id(obj)] = obj
    return id(obj)


def _array_layout() -> tuple[int, int, int] | None:
    """Byte offsets of ``PyArrayObject.nd``, ``PyArrayObject.descr`` and ``PyArray_Descr.kind``
    in this NumPy, checked on live objects; None if the layout is not the documented one (the
    generated code then relies on Numba's own unboxing checks only)."""
    nd, descr, kind = 24, 56, 24  # NumPy's C structs on 64-bit CPython, 1.x and 2.x alike
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    for value in (np.empty((2, 3, 4), "float32"), np.empty(5, "int64"), np.empty((), "bool")):
        a = id(value)
        if ctypes.c_int.from_address(a + nd).value != value.ndim:
            return None
        d = ctypes.c_void_p.from_address(a + descr).value
        if d is None:
            return None
        kind_char = ctypes.c_char.from_address(d + kind).value
        if d != id(value.dtype) or kind_char != value.dtype.kind.encode():
            return None
    return nd, descr, kind


_LAYOUT = _array_layout()


class _Kind:
    """How one PyTensor type crosses the native call: a tensor (``PyArrayObject*``) or a
    scalar (a NumPy scalar of exactly the type's dtype, as PyTensor's scalar C code wants)."""

    def __init__(self, pytensor_type, numba_type):
        self.numba_type = numba_type
        self.dtype = np.dtype(pytensor_type.dtype)
        self.tensor = hasattr(pytensor_type, "ndim") and hasattr(pytensor_type, "broadcastable")
        self.ndim = pytensor_type.ndim if self.tensor else 0

    def describe(self) -> str:
        return f"{self.ndim}-d {self.dtype} array" if self.tensor else f"{self.dtype} scalar"


def _kinds(variables):
    from pytensor.link.numba.dispatch.basic import get_numba_type

    kinds = []
    for v in variables:
        try:
            numba_type = get_numba_type(v.type)
        except NotImplementedError as e:
            raise NotImplementedError(
                f"libsection: Numba cannot pass a {v.type} to the C code ({e}); run this op "
                f"in mode='CVM' or mode='FAST_COMPILE'"
            ) from None
        kinds.append(_Kind(v.type, numba_type))
    return kinds


def register(numba_funcify, op_class, own_perform) -> None:
    """Registers ``op_class`` with PyTensor's ``numba_funcify``: Numba runs its nodes natively;
    ``own_perform(op)`` tells whether the op's class has its own ``perform`` (then the runner
    calls it, as PyTensor would)."""

    @numba_funcify.register(op_class)
    @entry_point
    def _funcify(op, node, **kwargs):
        return node_function(node, own_perform(op))


def register_batched(numba_funcify, op_class, own_perform) -> None:
    """Registers ``op_class`` (``BatchedOp``, a drop-in op's ``Blockwise``) with PyTensor's
    ``numba_funcify``: Numba calls the node's ``_core.Batched`` natively, once per batch."""

    @numba_funcify.register(op_class)
    @entry_point
    def _funcify(op, node, **kwargs):
        return node_function(node, False, native=op.batched(node))


def node_function(node, own_perform: bool, native=None):
    """A nopython Numba function running ``node``: the compiled C code called natively, or the
    op's own ``perform`` (``own_perform``) called from native code. ``native``: what to call in
    place of the node's compiled instance (a batched node's ``_core.Batched``)."""
    from pytensor.link.numba.dispatch.basic import numba_njit

    if own_perform:
        keep: Any = NodeRunner(node, True)  # or the compiled instance, below
        target: tuple[str, int] | tuple[str, int, int] = ("python", id(keep))  # kept alive below
    else:
        keep = compile_node(node) if native is None else native
        entry, op_address, n_in, n_out = _core.native_entry(keep)[:4]
        assert (n_in, n_out) == (len(node.inputs), len(node.outputs))
        target = ("native", entry, op_address)
    call = _intrinsic(type(node.op).__name__, _kinds(node.inputs), _kinds(node.outputs), target)
    names = ", ".join(f"x{i}" for i in range(len(node.inputs)))
    namespace = {"call": call}
    # Explicit arity: Numba types each argument on its own.
    exec(f"def run_{type(node.op).__name__}({names}):\n    return call({names})\n", namespace)
    function: Any = numba_njit(namespace[f"run_{type(node.op).__name__}"])
    # The struct lives as long as the function, which every compiled caller reaches (PyTensor's
    # graph function names it as a global); dropping the last caller frees it.
    function.libsection_instance = keep
    return function


def _intrinsic(name, in_kinds, out_kinds, target):
    """The node's call as a Numba intrinsic. Numba's typing context keeps every intrinsic for
    the process's lifetime, so the closure holds only addresses and descriptions, never the
    instance: the Numba function holds that."""
    import numba
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core.errors import TypingError
    from numba.extending import intrinsic

    ret_type = (
        out_kinds[0].numba_type
        if len(out_kinds) == 1
        else numba.types.Tuple([k.numba_type for k in out_kinds])
    )

    def accepts(kind, ty) -> bool:
        if isinstance(ty, numba.types.Array):
            return ty.ndim == kind.ndim and ty.dtype == numba.from_dtype(kind.dtype)
        return kind.ndim == 0 and isinstance(ty, (numba.types.Number, numba.types.Boolean))

    def typer(args):
        if len(args) != len(in_kinds):
            raise TypingError(f"{name} takes {len(in_kinds)} inputs, got {len(args)}")
        for i, (kind, ty) in enumerate(zip(in_kinds, args, strict=True)):
            if not accepts(kind, ty):
                raise TypingError(f"{name}: input {i} must be a {kind.describe()}, got {ty}")

        def codegen(context, builder, sig, llargs):
            return _call_node(
                context, builder, sig, llargs, name, in_kinds, out_kinds, target, ir, cgutils
            )

        return ret_type(*args), codegen

    # Numba types an intrinsic by its parameters: one per input, no *args.
    names = ", ".join(f"x{i}" for i in range(len(in_kinds)))
    namespace = {"typer": typer}
    exec(
        f"def call(typingctx, {names}):\n    return typer(({names}{',' if names else ''}))\n",
        namespace,
    )
    call = intrinsic(namespace["call"])
    return call


def _call_node(context, builder, sig, llargs, name, in_kinds, out_kinds, target, ir, cgutils):
    """The native call: box, call, check, unbox, with the GIL held throughout."""
    pyapi = context.get_python_api(builder)
    pyobj = pyapi.pyobj
    i32 = ir.IntType(32)

    def constant(obj_address, what):
        return builder.bitcast(context.add_dynamic_addr(builder, obj_address, info=what), pyobj)

    gil = pyapi.gil_ensure()
    boxed = []

    def fail():
        """Leaves with the Python error that is set (Numba re-raises it)."""
        for obj in boxed:
            pyapi.decref(obj)
        pyapi.gil_release(gil)
        context.call_conv.return_exc(builder)

    for kind, ty, value in zip(in_kinds, sig.args, llargs, strict=True):
        obj = _box(context, builder, pyapi, kind, ty, value, constant)
        with builder.if_then(cgutils.is_null(builder, obj), likely=False):
            fail()
        boxed.append(obj)

    n_out = len(out_kinds)
    outputs = cgutils.alloca_once(builder, pyobj, size=max(n_out, 1))
    if target[0] == "native":
        inputs = cgutils.alloca_once(builder, pyobj, size=max(len(boxed), 1))
        for i, obj in enumerate(boxed):
            builder.store(obj, builder.gep(inputs, [ir.Constant(i32, i)]))
        entry_type = ir.FunctionType(i32, [pyobj, pyobj.as_pointer(), pyobj.as_pointer()])
        entry = context.add_dynamic_addr(builder, target[1], info="libsection entry")
        entry = builder.bitcast(entry, entry_type.as_pointer())
        status = builder.call(entry, [constant(target[2], f"libsection {name}"), inputs, outputs])
        with builder.if_then(builder.icmp_signed("!=", status, ir.Constant(i32, 0)), likely=False):
            fail()
    else:
        result = pyapi.call_function_objargs(
            constant(target[1], f"libsection {name} runner"), boxed
        )
        with builder.if_then(cgutils.is_null(builder, result), likely=False):
            fail()
        if n_out == 1:
            builder.store(result, outputs)
        else:
            for j in range(n_out):
                item = pyapi.tuple_getitem(result, j)
                pyapi.incref(item)
                builder.store(item, builder.gep(outputs, [ir.Constant(i32, j)]))
            pyapi.decref(result)
    for obj in boxed:
        pyapi.decref(obj)
    boxed.clear()

    out_objs = [builder.load(builder.gep(outputs, [ir.Constant(i32, j)])) for j in range(n_out)]

    def fail_with_outputs():
        for obj in out_objs:
            pyapi.decref(obj)
        fail()

    values = []
    for j, kind in enumerate(out_kinds):
        obj = out_objs[j]
        if kind.tensor:
            bad = _not_array_of(context, builder, pyapi, obj, kind, constant, ir, cgutils)
            with builder.if_then(bad, likely=False):
                pyapi.err_set_string(
                    "PyExc_TypeError",
                    f"{name}: output {j} is not a {kind.describe()}, as the node declares",
                )
                fail_with_outputs()
        native = pyapi.to_native_value(kind.numba_type, obj)
        with builder.if_then(native.is_error, likely=False):
            fail_with_outputs()
        values.append(native.value)
    for obj in out_objs:
        pyapi.decref(obj)
    pyapi.gil_release(gil)
    if n_out == 1:
        return values[0]
    return context.make_tuple(builder, sig.return_type, values)


def _box(context, builder, pyapi, kind, ty, value, constant):
    """A new reference to the Python object the C code reads for one input (NULL on error)."""
    import numba

    if isinstance(ty, numba.types.Array):
        # What numba's own boxing calls, minus its per-call unpickling of the array's Python
        # type (a Python call each time): the type and dtype are constants here. Acquires its
        # own reference; the argument stays owned by the caller.
        from llvmlite import ir
        from numba.core import cgutils
        from numba.np.numpy_support import as_dtype

        i32 = ir.IntType(32)
        adapt = pyapi._get_function(
            ir.FunctionType(pyapi.pyobj, [pyapi.voidptr, pyapi.pyobj, i32, i32, pyapi.pyobj]),
            name="NRT_adapt_ndarray_to_python_acqref",
        )
        struct = cgutils.alloca_once_value(builder, value)
        obj = builder.call(
            adapt,
            [
                builder.bitcast(struct, pyapi.voidptr),
                constant(_address(ty.box_type), "array type"),
                ir.Constant(i32, ty.ndim),
                ir.Constant(i32, int(ty.mutable)),
                constant(_address(as_dtype(ty.dtype)), "dtype"),
            ],
        )
        if kind.tensor:
            return obj
    else:
        obj = pyapi.from_native_value(ty, value)
        if kind.tensor:  # a number for a 0-d tensor: np.asarray(x, dtype)
            return _call_then_decref(
                builder,
                pyapi,
                constant(_address(np.asarray), "np.asarray"),
                obj,
                constant(_address(kind.dtype), "dtype"),
            )
    # PyTensor's scalar C code takes exactly its NumPy scalar type: np.float64(x).
    return _call_then_decref(
        builder, pyapi, constant(_address(kind.dtype.type), "scalar type"), obj
    )


def _call_then_decref(builder, pyapi, function, obj, *more):
    """function(obj, *more), releasing obj; NULL if obj is NULL or the call fails."""
    from numba.core import cgutils

    result = cgutils.alloca_once_value(builder, pyapi.get_null_object())
    with builder.if_then(cgutils.is_not_null(builder, obj), likely=True):
        builder.store(pyapi.call_function_objargs(function, [obj, *more]), result)
        pyapi.decref(obj)
    return builder.load(result)


def _not_array_of(context, builder, pyapi, obj, kind, constant, ir, cgutils):
    """True unless ``obj`` is an ndarray of the kind's ndim and dtype kind (Numba's unboxing
    checks only the item size, and would write past its array struct on a wrong ndim)."""
    isinstance_ = pyapi._get_function(
        ir.FunctionType(ir.IntType(32), [pyapi.pyobj, pyapi.pyobj]), name="PyObject_IsInstance"
    )
    is_array = builder.call(isinstance_, [obj, constant(_address(np.ndarray), "np.ndarray")])
    bad = builder.icmp_signed("!=", is_array, ir.Constant(is_array.type, 1))
    if _LAYOUT is None:
        return bad
    nd_offset, descr_offset, kind_offset = _LAYOUT
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    flag = cgutils.alloca_once_value(builder, bad)
    with builder.if_then(builder.not_(bad), likely=True):
        base = builder.bitcast(obj, i8p)
        nd = builder.load(
            builder.bitcast(builder.gep(base, [ir.Constant(i32, nd_offset)]), i32.as_pointer())
        )
        descr = builder.load(
            builder.bitcast(builder.gep(base, [ir.Constant(i32, descr_offset)]), i8p.as_pointer())
        )
        dtype_kind = builder.load(builder.gep(descr, [ir.Constant(i32, kind_offset)]))
        wrong = builder.or_(
            builder.icmp_signed("!=", nd, ir.Constant(i32, kind.ndim)),
            builder.icmp_unsigned(
                "!=", dtype_kind, ir.Constant(ir.IntType(8), ord(kind.dtype.kind))
            ),
        )
        builder.store(wrong, flag)
    return builder.load(flag)
