"""The backend table: PyTensor's backends for op classes that run C code, registered through
one interface, and the only way into libsection's backend modules.

PyTensor turns a node into a backend's function through that backend's dispatcher
(``numba_funcify``, ``jax_funcify``, ...). ``BACKENDS`` lists each backend with the function
that registers an op class with its dispatcher, all with one signature: Numba
(python/libsection/_numba.py), JAX (python/libsection/_jax.py), and a clear error for those
that cannot run C code (PyTorch, MLX); and the one that registers a batched node's class
(``BatchedOp``, whose nodes convert otherwise). The C VM (``CVM``, ``FAST_COMPILE``, and
``FAST_RUN`` without Numba) has no dispatcher: it calls the op's own ``make_c_thunk``.

A backend's dispatch module imports its framework (``numba``, ``jax``, ``torch``, ``mlx``),
which takes seconds, so nothing is imported here: each registration runs when PyTensor first
imports that backend's dispatch module (at once if it already has), and imports libsection's
module for that backend then, by name (``FRAMEWORK_HOOKS`` likewise, when a framework itself is
imported). No other module of the package imports a backend module: importing
``libsection.pytensor`` runs no Numba or JAX code.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.abc
import sys
import warnings
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

# The modes in which a drop-in op runs its C code (or its own perform).
RUNNING_MODES = ("CVM", "FAST_COMPILE", "NUMBA", "FAST_RUN", "JAX")

# Dispatch module -> what to run once it is imported.
_pending: dict[str, list[Callable[[ModuleType], None]]] = {}


def when_imported(module: str, callback: Callable[[ModuleType], None]) -> None:
    """Runs ``callback(module)`` once ``module`` is imported (now, if it already is)."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        _run(callback, loaded)
        return
    _pending.setdefault(module, []).append(callback)
    if not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


def _run(callback, module) -> None:
    try:
        callback(module)
    except Exception as e:  # a registration must never break PyTensor's own import
        warnings.warn(
            f"libsection could not register with {module.__name__}: {e!r}",
            RuntimeWarning,
            stacklevel=2,
        )


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds modules through the other finders and runs the pending callbacks after the
    module's own code."""

    def find_spec(self, name, path=None, target=None):
        if name not in _pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ThenRegister(spec.loader, name)
        return spec


class _ThenRegister(importlib.abc.Loader):
    def __init__(self, loader, name):
        self.loader, self.name = loader, name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        for callback in _pending.pop(self.name, []):
            _run(callback, module)

    def __getattr__(self, attribute):  # get_source, is_package, ... of the real loader
        return getattr(self.loader, attribute)


def unsupported(backend: str, op) -> NotImplementedError:
    return NotImplementedError(
        f"libsection: {type(op).__name__} runs C code, which PyTensor's {backend} backend cannot "
        f"call. Compile this function with one of the modes that run it: "
        f"{', '.join(RUNNING_MODES)}."
    )


# own_perform(op): whether the op's class has its own ``perform`` (which then runs, as PyTensor
# would run it).
OwnPerform = Callable[[Any], bool]
# register(dispatcher, op_class, own_perform): ``op_class``'s nodes become the backend's functions.
Registration = Callable[[Any, type, OwnPerform], None]


@dataclasses.dataclass(frozen=True)
class Backend:
    """One backend PyTensor converts nodes for through a dispatcher."""

    name: str
    dispatch: str  # the module that defines the dispatcher
    dispatcher: str  # its name there
    register: Registration
    # How a batched node's class registers (None: the backend does not convert batched nodes).
    register_batched: Registration | None = None


def _registration_of(module: str, function: str = "register") -> Registration:
    """The registration ``function`` of libsection's module for a backend, imported when first
    used (it needs PyTensor, which the standalone ops do without)."""

    def register(dispatcher, op_class, own_perform) -> None:
        getattr(importlib.import_module(f"{__package__}.{module}"), function)(
            dispatcher, op_class, own_perform
        )

    return register


def refusal(backend: str) -> Registration:
    """The registration of a backend that cannot call C code: converting a node raises
    ``unsupported``."""

    def register(dispatcher, op_class, own_perform) -> None:
        def funcify(op, node=None, **kwargs):
            raise unsupported(backend, op)

        dispatcher.register(op_class)(funcify)

    return register


BACKENDS = (
    Backend(
        "Numba",
        "pytensor.link.numba.dispatch.basic",
        "numba_funcify",
        _registration_of("_numba"),
        _registration_of("_numba", "register_batched"),
    ),
    Backend(
        "JAX",
        "pytensor.link.jax.dispatch.basic",
        "jax_funcify",
        _registration_of("_jax"),
        _registration_of("_jax", "register_batched"),
    ),
    Backend(
        "PyTorch", "pytensor.link.pytorch.dispatch.basic", "pytorch_funcify", refusal("PyTorch")
    ),
    Backend("MLX", "pytensor.link.mlx.dispatch.basic", "mlx_funcify", refusal("MLX")),
)


def _framework_hook(module: str, function: str) -> Callable[[ModuleType], None]:
    def run(framework: ModuleType) -> None:
        getattr(importlib.import_module(f"{__package__}.{module}"), function)(framework)

    return run


# Framework -> what libsection's backend module does once it is imported, whatever imported it:
# a JAX computation exported from another process (jax.export) calls libsection's XLA target
# by name, so the target is registered with XLA whenever this process imports JAX.
FRAMEWORK_HOOKS = {"jax": _framework_hook("_jax_ffi", "register_at_import")}


def watch_frameworks() -> None:
    """Runs each of ``FRAMEWORK_HOOKS`` when its framework is imported (now, if it is)."""
    for framework, hook in FRAMEWORK_HOOKS.items():
        when_imported(framework, hook)


def register(
    op_class: type, own_perform: OwnPerform, backends: Iterable[Backend] = BACKENDS
) -> None:
    """``op_class`` with every backend, each when PyTensor imports its dispatch module."""
    for backend in backends:
        when_imported(backend.dispatch, _registering(backend, op_class, own_perform))


def _registering(backend: Backend, op_class: type, own_perform: OwnPerform):
    def run(module: ModuleType) -> None:
        backend.register(getattr(module, backend.dispatcher), op_class, own_perform)

    return run


def register_batched(op_class: type, backends: Iterable[Backend] = BACKENDS) -> None:
    """``op_class`` (a batched node's, ``BatchedOp``) with every backend that converts batched
    nodes, each when PyTensor imports its dispatch module."""
    for backend in backends:
        if backend.register_batched is not None:
            batched = dataclasses.replace(backend, register=backend.register_batched)
            when_imported(backend.dispatch, _registering(batched, op_class, lambda op: False))
