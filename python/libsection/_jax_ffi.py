"""The XLA FFI target that runs libsection nodes inside compiled JAX computations.

``_jax_ffi_handler.cpp`` (beside this file) is built once per jaxlib, through the module cache
like any module (its key covers the source, which names the jaxlib version, and jaxlib's
header folder), loaded, and registered with XLA as the CPU target ``libsection_node``. A node
lowers to one ``jax.ffi.ffi_call`` of that target, whose attributes carry the address of the
node's compiled instance and of its native entry (the one Numba calls): no Python frame runs
per call. When the target cannot be had (jaxlib without FFI headers, no compiler), the caller
falls back to ``jax.pure_callback`` after one WARNING saying why.
"""

from __future__ import annotations

import ctypes
import logging
import re
import threading
import weakref
from importlib import resources
from pathlib import Path

import numpy as np

from . import _core

__all__ = ["TARGET", "call_node", "original_error", "target_ready"]

TARGET = "libsection_node"
_log = logging.getLogger("libsection")
_lock = threading.Lock()
_state: dict[str, object] = {}  # "ready": True, or "why": the reason there is no target

# The dtypes the handler passes (XLA's element types that NumPy has).
SUPPORTED_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
)  # fmt: skip


def _build_and_register() -> None:
    import jax
    import jax.ffi
    import jaxlib

    include = Path(jax.ffi.include_dir())
    if not (include / "xla" / "ffi" / "api" / "ffi.h").is_file():
        raise RuntimeError(f"jaxlib {jaxlib.__version__} has no XLA FFI headers in {include}")
    code = resources.files("libsection").joinpath("_jax_ffi_handler.cpp").read_text()
    code = f"// for jaxlib {jaxlib.__version__}\n{code}"
    symbols, _ = _core.load_support_library(
        "jax_ffi_handler", code, [str(include)], ["libsection_jax_call"]
    )
    handler = ctypes.cast(symbols["libsection_jax_call"], ctypes.CFUNCTYPE(ctypes.c_void_p))
    _keep_instances_with_executables()
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(handler), platform="cpu")


def _keep_instances_with_executables() -> None:
    """Makes every XLA executable that calls the target keep the instance it calls alive, as
    JAX keeps a ``pure_callback``'s function: an executable can outlive the Python function it
    was traced from (JAX caches it, and runs it asynchronously), and a freed instance would be
    called. The lowering of ``ffi_call`` on the CPU is wrapped to register the instance as a
    keepalive of the module being lowered; other targets lower as before."""
    from jax._src import ffi as jax_ffi
    from jax._src.interpreters import mlir

    lower = jax_ffi.ffi_call_lowering

    def lowering(ctx, *operands, target_name, attributes, **params):
        if target_name == TARGET:
            op = dict(jax_ffi._unwrap_kwargs_hashable(attributes))["op"]
            instance = _instances.get(int(op))
            if instance is None:  # the function that traced this call is gone
                raise RuntimeError("libsection: lowering a call of a freed op instance")
            ctx.module_context.add_keepalive(instance)
        return lower(ctx, *operands, target_name=target_name, attributes=attributes, **params)

    mlir.register_lowering(jax_ffi.ffi_call_p, lowering, platform="cpu")


def target_ready() -> bool:
    """Whether the FFI target is registered in this process (built on the first call; a
    failure is logged once as a WARNING, and every later call answers False at once)."""
    if "ready" in _state:
        return True
    if "why" in _state:
        return False
    with _lock:
        if not _state:
            try:
                _build_and_register()
                _state["ready"] = True
            except Exception as e:  # any reason: the callback path still runs the op
                _state["why"] = f"{type(e).__name__}: {e}"
                _log.warning(
                    "libsection: JAX runs C ops through jax.pure_callback (a Python round trip "
                    "per call): the XLA FFI handler could not be built (%s)",
                    _state["why"],
                )
    return "ready" in _state


# Exceptions raised by ops' C code under the FFI call, by the address of the list holding them
# (the handler appends each, and its FFI error names list and index): what `original_error`
# looks up to raise the op's own exception instead of XLA's runtime error.
class _Errors(list):
    """A list the handler appends to; weakly referenced from the registry below."""


class _Instance:
    """What an FFI call points at: a node's CompiledOp and the list its errors go to."""

    __slots__ = ("__weakref__", "compiled", "errors")

    def __init__(self, compiled, errors):
        self.compiled, self.errors = compiled, errors


_error_lists: weakref.WeakValueDictionary[int, _Errors] = weakref.WeakValueDictionary()
# By the CompiledOp's address, while a function or an executable holds it.
_instances: weakref.WeakValueDictionary[int, _Instance] = weakref.WeakValueDictionary()
_MARKER = re.compile(r"\[libsection (\d+):(-?\d+)\] \S+ in (\S+): ")


def call_node(compiled, name: str, in_kinds, out_kinds, batch=None):
    """``(output specs, *inputs) -> outputs``: ``compiled`` (a node's CompiledOp) run through
    the FFI target. ``in_kinds``/``out_kinds``: ``(core ndim, kind)`` per value, kind 0 for a
    scalar, 1 for a tensor, 2 for a tensor input the op destroys (the handler copies it).
    ``batch``: the node's ``_core.Batched`` (``_batched.ffi_batch``), which runs a vmapped
    call's whole batch in one C loop; without it, the handler calls the op per batch element."""
    import jax

    _, op_address, _, _, entry = _core.native_entry(compiled)
    batch_entry, batch_op = (_core.native_entry(batch)[4], id(batch)) if batch else (0, 0)
    errors = _Errors()
    _error_lists[id(errors)] = errors
    attributes = {
        "entry": np.uint64(entry),
        "op": np.uint64(op_address),
        "errors": np.uint64(id(errors)),
        "name": name,
        "in_ndims": np.array([n for n, _ in in_kinds], np.int64),
        "in_kinds": np.array([k for _, k in in_kinds], np.int64),
        "out_ndims": np.array([n for n, _ in out_kinds], np.int64),
        "out_kinds": np.array([k for _, k in out_kinds], np.int64),
        "batch_entry": np.uint64(batch_entry),
        "batch_op": np.uint64(batch_op),
    }

    def call(specs, *xs):
        return jax.ffi.ffi_call(TARGET, specs, vmap_method="broadcast_all")(*xs, **attributes)

    # What the call points at lives as long as this function, and as every executable that
    # makes the call (their keepalive).
    call.instance = _instances[op_address] = _Instance(batch or compiled, errors)  # type: ignore[attr-defined]
    return call


def original_error(error: BaseException) -> BaseException | None:
    """The op's own exception behind a JAX runtime error from the FFI target, if any (once:
    the registry forgets it, so it keeps no traceback alive)."""
    match = _MARKER.search(str(error))
    if match is None:
        return None
    errors = _error_lists.get(int(match.group(1)))
    index = int(match.group(2))
    if errors is None or not 0 <= index < len(errors) or errors[index] is None:
        return None
    own, errors[index] = errors[index], None
    own.add_note(f"raised by {match.group(3)}'s C code, called by XLA in a JAX computation")
    return own
