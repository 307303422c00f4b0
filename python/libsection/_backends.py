"""PyTensor's other backends for drop-in ops: JAX (python/libsection/_jax.py), and a clear
error for those that cannot run C code (PyTorch, MLX).

A backend's dispatch module imports its framework (``jax``, ``torch``, ``mlx``), which takes
seconds, so nothing is imported here: each registration runs when PyTensor first imports that
backend's dispatch module (at once if it already has).
"""

from __future__ import annotations

import importlib.abc
import sys
import warnings
from collections.abc import Callable
from types import ModuleType

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


def register(op_class, own_perform) -> None:
    """Every backend but Numba (python/libsection/_numba.py) for ``op_class``."""
    from . import _jax

    when_imported(
        "pytensor.link.jax.dispatch.basic",
        lambda m: _jax.register(m.jax_funcify, op_class, own_perform),
    )
    when_imported("pytensor.link.jax.linker", lambda m: _jax.raise_own_errors(m.JAXLinker))
    for backend, module, dispatcher in (
        ("PyTorch", "pytensor.link.pytorch.dispatch.basic", "pytorch_funcify"),
        ("MLX", "pytensor.link.mlx.dispatch.basic", "mlx_funcify"),
    ):
        when_imported(module, _refuse(backend, op_class, dispatcher))


def _refuse(backend, op_class, dispatcher):
    def register_refusal(module):
        def funcify(op, node=None, **kwargs):
            raise unsupported(backend, op)

        getattr(module, dispatcher).register(op_class)(funcify)

    return register_refusal
