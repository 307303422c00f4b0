"""The XLA FFI target that runs libsection nodes inside compiled JAX computations.

``_jax_ffi_handler.cpp`` (beside this file) is built once per jaxlib, through the module cache
like any module (its key covers the source, which names the jaxlib version, and jaxlib's
header folder), loaded as a support library of the linker core, handed ``instantiate``
(``libsection_jax_connect``), and registered with XLA as the CPU target ``libsection_node``, a
stateful handler. A node lowers to one ``jax.ffi.ffi_call`` of that target whose attributes
name what it runs by values that mean the same in any process: the module's cache key, a
token for the instance that traced it, the op's name, its params as JSON text, and the kinds,
ranks and dtypes of its values. When XLA instantiates an executable, the handler asks
``instantiate`` for the node's CompiledOp: the live instance of that token, or, for a
computation exported from another process (``jax.export``), an instance of the module loaded
from this process's cache; the executable holds it until XLA frees it, with the node's
``_core.Batched`` that runs a vmapped call's batch in one C loop (the ``batch`` attribute says
how, ``_batched.ffi_batch`` makes it). No Python frame runs per call. When the target cannot
be had (jaxlib without FFI headers, no compiler), the caller falls back to
``jax.pure_callback`` after one WARNING saying why.

An op's exception under XLA (the FFI call's or the callback's) is reported to this module
(``Failures.report``) before XLA turns it into its runtime error: ``original_error`` finds
the exception itself in that record by data (the failures' numbers after a mark taken before
the call, and the thread), never by the text of XLA's error, which is for people.
"""

from __future__ import annotations

import ctypes
import json
import logging
import threading
import uuid
import weakref
from importlib import resources
from pathlib import Path

import numpy as np

from . import _batched, _core

__all__ = [
    "TARGET",
    "Failures",
    "call_node",
    "failure_mark",
    "instantiate",
    "original_error",
    "register_at_import",
    "target_ready",
]

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
    entries = ("libsection_jax_instantiate", "libsection_jax_execute")
    symbols, _ = _core.load_support_library(
        "jax_ffi_handler", code, [str(include)], [*entries, "libsection_jax_connect"]
    )
    # The handler's instantiate stage asks this module's `instantiate`, which it is handed here.
    connect = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(symbols["libsection_jax_connect"])
    connect(instantiate)
    # A stateful target: the handler registers its state's type itself, when XLA registers it.
    stages = {
        stage: jax.ffi.pycapsule(symbols[entry])
        for stage, entry in zip(("instantiate", "execute"), entries, strict=True)
    }
    jax.ffi.register_ffi_target(TARGET, stages, platform="cpu")


def target_ready() -> bool:
    """Whether the FFI target is registered in this process (built on the first call; a
    failure is logged once as a WARNING, and every later call answers False at once)."""
    if "ready" not in _state:
        _register()
        if _state.pop("untold", False):
            _log.warning(
                "libsection: JAX runs C ops through jax.pure_callback (a Python round trip "
                "per call): the XLA FFI handler could not be built (%s)",
                _state["why"],
            )
    return "ready" in _state


def register_at_import(_jax=None) -> None:
    """Registers the target as soon as JAX is imported (libsection/__init__.py asks), so that
    a computation exported from another process finds it; quietly: a failure is told at the
    first use of an op."""
    _register()


def _register() -> None:
    with _lock:
        if not _state:
            try:
                _build_and_register()
                _state["ready"] = True
            except Exception as e:  # any reason: the callback path still runs the op
                _state["why"] = f"{type(e).__name__}: {e}"
                _state["untold"] = True


class Failures:
    """The exceptions raised by ops under XLA (an FFI call's or a callback's), each reported
    here (``report``) on the thread that ran the op, before XLA turns it into its runtime
    error: what ``original_error`` looks up to raise the op's own exception instead. Each is
    numbered in the order it came; a caller marks the count before its call (``mark``) and
    takes a later one after (``take``). Found by these numbers and the thread alone: the text
    of XLA's error is for people and is never read. Bounded: the last 64 are kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._kept: list[tuple[int, int, BaseException, str]] = []  # number, thread, error, op

    def report(self, error: BaseException, name: str) -> None:
        with self._lock:
            self._count += 1
            failure = (self._count, threading.get_ident(), error, name)
            self._kept = [*self._kept[-63:], failure]

    def mark(self) -> int:
        """The number of the last failure reported: ``take(since=mark)`` finds later ones."""
        return self._count

    def take(self, since: int) -> tuple[BaseException, str] | None:
        """The latest failure after ``since`` with its op's name: one this thread ran if there
        is one (XLA runs a CPU computation on its caller's thread), else one of another
        thread's (XLA's own, when it runs the computation there); taken once, so no traceback
        stays alive."""
        here = threading.get_ident()
        with self._lock:
            later = [k for k, failure in enumerate(self._kept) if failure[0] > since]
            if not later:
                return None
            own = [k for k in later if self._kept[k][1] == here]
            _, _, error, name = self._kept.pop((own or later)[-1])
        return error, name


_failures = Failures()


def _reporter(name: str):
    """What the handler (or the callback) hands an op's exception to: ``_failures.report``."""

    def report(error: BaseException) -> None:
        _failures.report(error, name)

    return report


def failure_mark() -> int:
    """A mark before a call: ``original_error(error, since=mark)`` looks only at later failures."""
    return _failures.mark()


def reported_error(error: BaseException, name: str) -> str:
    """Reports ``error`` (the callback path's) and returns the text XLA's runtime error gets,
    as the handler's, for people: its class and the op, in UTF-8 (a lone surrogate, as a file
    name os.fsdecode made may carry, is written as its escape: JAX crashes on a callback's
    error whose message is not UTF-8)."""
    _failures.report(error, name)
    text = f"{type(error).__name__} in {name}: {error}"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def original_error(error: BaseException, since: int = 0) -> BaseException | None:
    """The op's own exception behind ``error``, a JAX runtime error (XLA's, from the FFI target
    or the callback), if any: the latest failure reported after ``since`` (``failure_mark``),
    preferably on this thread; taken once: the record forgets it, so it keeps no traceback
    alive. Any other exception (one raised while tracing, say) has none."""
    if not _is_runtime_error(error):
        return None
    found = _failures.take(since)
    if found is None:
        return None
    own, name = found
    own.add_note(f"raised by {name} in a JAX computation, called by XLA")
    return own


def _is_runtime_error(error: BaseException) -> bool:
    """Whether ``error`` is the error XLA raises when a computation fails at run time."""
    import jax.errors

    return isinstance(error, jax.errors.JaxRuntimeError)


class _Instance:
    """What a call site runs: a node's CompiledOp, what its errors are reported to, its
    module's cache key, and the ``_core.Batched`` that runs a vmapped call's batch (or None)."""

    __slots__ = ("__weakref__", "batched", "compiled", "key", "report")

    def __init__(self, compiled, report, key: str, batched=None):
        self.compiled, self.report, self.key, self.batched = compiled, report, key, batched


def _batch(compiled, name: str, in_ndims, out_ndims, batch: int):
    """The node's ``_core.Batched`` for batch mode ``batch`` (see ``call_node``), or None."""
    if not batch:
        return None
    return _batched.ffi_batch(compiled, name, list(in_ndims), list(out_ndims), batch == 2)


# The instances of this process's traced calls, by token, while their functions live (an
# executable's state holds its own reference).
_live: weakref.WeakValueDictionary[str, _Instance] = weakref.WeakValueDictionary()


def call_node(compiled, name: str, ins, outs, params, batch: int = 0):
    """``(output specs, *inputs) -> outputs``: ``compiled`` (a node's CompiledOp, whose params
    are ``params``) run through the FFI target. ``ins``/``outs``: ``(core ndim, kind, dtype)``
    per value, kind 0 for a scalar, 1 for a tensor, 2 for a tensor input the op destroys (the
    handler copies it); the dtype is the node's, which JAX may canonicalise (the handler then
    converts). ``batch``: how a vmapped call runs its batch where the module has a batch entry:
    0 per element, 1 in one C loop over the rows, 2 in one call (``vmap_method`` is
    ``"broadcast_all"``); see ``_batched.ffi_batch``."""
    import jax

    key = compiled.info["key"]
    name = _module_op_name(compiled, name)
    batched = _batch(compiled, name, [n for n, _, _ in ins], [n for n, _, _ in outs], batch)
    instance = _Instance(compiled, _reporter(name), key, batched)
    token = uuid.uuid4().hex
    _live[token] = instance
    attributes = {
        "module": key,
        "instance": token,
        "name": name,
        "params": _params_text(params),
        "in_ndims": np.array([n for n, _, _ in ins], np.int64),
        "in_kinds": np.array([k for _, k, _ in ins], np.int64),
        "in_types": np.array([np.dtype(d).num for _, _, d in ins], np.int64),
        "out_ndims": np.array([n for n, _, _ in outs], np.int64),
        "out_kinds": np.array([k for _, k, _ in outs], np.int64),
        "out_types": np.array([np.dtype(d).num for _, _, d in outs], np.int64),
        "batch": np.int64(batch),
    }

    def call(specs, *xs):
        return jax.ffi.ffi_call(TARGET, specs, vmap_method="broadcast_all")(*xs, **attributes)

    call.instance = instance  # type: ignore[attr-defined]
    return call


def _module_op_name(compiled, name: str) -> str:
    """The name the module of ``compiled`` knows its op by (its manifest's, which
    ``_core.link_cached`` checks in another process): a derivative's module names the op it
    differentiates (``Logistic.pullback``), where ``name`` is its node op's class. ``name``
    when the module holds several ops."""
    ops = compiled.info.get("ops") or []
    return ops[0] if len(ops) == 1 else name


def instantiate(key: str, token: str, name: str, params: str, in_ndims, out_ndims, batch: int):
    """Called by the handler when XLA instantiates a call site: ``(CompiledOp, native entry,
    report, Batched or None, its native entry or 0)`` of the instance the call names, this
    process's own or, for a computation exported from another process, one loaded from the
    module cache (with its ``Batched`` made here, from the call's ranks and ``batch``)."""
    live = _live.get(token)
    if live is None or live.key != key:
        n_in, n_out = len(in_ndims), len(out_ndims)
        compiled = _core.link_cached(key, name, n_in, n_out, [_params_value(params, name)])
        if compiled is None:
            raise LookupError(
                f"libsection: this computation runs {name}'s module {key}, which the module "
                f"cache {_core.cache_dir()} does not hold. Build it there first: run the code "
                f"that made the computation (or any function with the same {name} node) once "
                f"with LIBSECTION_CACHE_DIR pointing at this cache, then call it again"
            )
        batched = _batch(compiled, name, in_ndims, out_ndims, batch)
        live = _Instance(compiled, _reporter(name), key, batched)
    batch_entry = 0 if live.batched is None else _core.native_entry(live.batched)[4]
    return (
        live.compiled,
        _core.native_entry(live.compiled)[4],
        live.report,
        live.batched,
        batch_entry,
    )


# ---- params as text -------------------------------------------------------------------------
# An exported computation carries the node's params as JSON (never pickle: it may come from
# anywhere): numbers, NumPy scalars and arrays, and dicts of them (PyTensor's Params).


def _encode(value):
    if isinstance(value, (np.generic, np.ndarray, bool, int, float, complex)):
        array = np.asarray(value)
        if array.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"a value of dtype {array.dtype}")
        flat = array.ravel().tolist()
        if array.dtype.kind == "c":
            flat = [[z.real, z.imag] for z in flat]
        kind = "array" if isinstance(value, np.ndarray) else "scalar"
        return {kind: array.dtype.name, "shape": list(array.shape), "values": flat}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"fields": {k: _encode(v) for k, v in value.items()}}
    raise TypeError(f"a {type(value).__name__}")


def _decode(encoded):
    if "fields" in encoded:
        return {k: _decode(v) for k, v in encoded["fields"].items()}
    kind = "scalar" if "scalar" in encoded else "array"
    dtype = np.dtype(encoded[kind])
    if dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"dtype {dtype}")
    values = encoded["values"]
    if dtype.kind == "c":
        values = [complex(r, i) for r, i in values]
    array = np.array(values, dtype=dtype).reshape(encoded["shape"])
    return array[()] if kind == "scalar" else array


def _params_text(params) -> str:
    """The params as an exported computation carries them: "" without params, JSON, or "!"
    and what they are when JSON cannot hold them (a computation in this process needs no
    text: it runs the instance it traced)."""
    if params is None:
        return ""
    try:
        return json.dumps(_encode(params))
    except TypeError as e:
        return f"!{e}"


def _params_value(text: str, name: str):
    if not text:
        return None
    if text.startswith("!"):
        raise TypeError(
            f"libsection: {name}'s params ({text[1:]}) cannot travel in an exported "
            f"computation: only numbers, NumPy scalars and arrays, and dicts of them can"
        )
    try:
        return _decode(json.loads(text))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(
            f"libsection: {name}'s params in this computation are malformed: {e}"
        ) from e
