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

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _batched, _core
from ._build import BUILD_FLAGS, build, build_flags, checked_language
from ._load import folder_of_class, load, relative_to_class
from ._memo import Lru
from ._protocol import BUILD_METHODS, RESHAPING_METHODS
from ._traceback import cut_library_frames, entry_point
from ._types import type_of

__all__ = ["ExternalCOp"]

log = logging.getLogger("libsection")

# Compiled ops kept per op instance, by input types, params and flags: bounded, since params
# changed in a loop make a new key each time (a dropped one is found again in the disk cache).
_SIGNATURES = 256


class ExternalCOp:
    r"""Base class for ops whose C implementation lives in ``#section`` files.

    Subclasses set ``func_files`` (a path or list of paths, relative to the file defining the
    subclass) and ``func_name`` (or pass them to the constructor, as PyTensor's ExternalCOp
    takes them), and define ``output_types``. Optional class attributes: ``_cop_num_inputs`` /
    ``_cop_num_outputs`` (NULL padding of the call), ``check_input`` (dtype macros), and
    ``params``, a ``{field: type string}`` dict whose values are the instance's attributes of
    those names, seen by the C code as ``params->field``, and ``language``, ``"c++"`` (the
    default) or ``"c"``: files declared C are checked as C and their module compiled as C;
    ``release_gil = False`` keeps the GIL while the C code runs (by default it runs without it
    where the linker sees that is safe, README "Threads").
    With ``gufunc_signature`` (``"(n),(n)->(n)"``), arrays with leading batch dimensions are
    broadcast as NumPy's gufuncs broadcast them and the C code runs over their rows in one C
    loop; ``vmap_method = "broadcast_all"`` says the C code takes the whole batch itself.

    What the module's build needs besides the files, by PyTensor's names: ``c_compile_args()``,
    ``c_header_dirs()`` and ``c_lib_dirs()`` (relative folders are relative to the file that
    defines the subclass, as ``func_files`` are), ``c_libraries()`` and ``c_headers()``. Their
    values are part of each module's cache key. The C code itself comes from the files only: a
    subclass defining another ``c_*`` method (``c_code``, ``c_support_code``, ...), which this
    class would not call, is refused when it is constructed.

    Args:
        func_files: The section files, if the class does not set them.
        func_name: The function the op calls, if the class does not set it.

    Raises:
        ValueError: No section files, or a ``language`` other than ``"c++"`` and ``"c"``.
        TypeError: The class defines a ``c_*`` method this class does not call.

    Examples:
        >>> import numpy as np, libsection
        >>> from pathlib import Path
        >>> _ = Path("twice.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n")
        >>> class Twice(libsection.ExternalCOp):
        ...     func_files = ["twice.c"]  # beside the file defining the class
        ...
        ...     def output_types(self, x: str) -> list[str]:
        ...         if libsection.ndim(x) != 0:
        ...             raise TypeError(f"Twice takes a number, not {x}")
        ...         return [x]
        >>> print(Twice()(1.5), Twice()(np.int32(4)))
        3.0 8
        >>> Twice()(np.ones(2))
        Traceback (most recent call last):
            ...
        TypeError: Twice takes a number, not float64[:]
    """

    func_files: str | Path | Sequence[str | Path] = ()
    func_name: str | None = None
    _cop_num_inputs: int | None = None
    _cop_num_outputs: int | None = None
    check_input: bool = True
    params: dict[str, str] = {}
    language: str = "c++"
    release_gil: bool = True
    gufunc_signature: str | None = None
    vmap_method: str = "sequential"

    def __init__(
        self,
        func_files: str | Path | Sequence[str | Path] | None = None,
        func_name: str | None = None,
    ) -> None:
        files = self.func_files if func_files is None else func_files
        if isinstance(files, (str, Path)):
            files = [files]
        if not files:
            raise ValueError(f"{type(self).__name__}: no section files (set func_files)")
        self.func_files = [Path(f) for f in files]
        if func_name is not None:
            self.func_name = func_name
        checked_language(type(self).__name__, self.language)  # a bad value fails here, not later
        _refuse_unhonoured_methods(type(self))
        self._compiled: Lru[tuple, Any] = Lru(_SIGNATURES)
        self._loaded: _core.LoadedSections | None = None
        self._dispatch = _core.Dispatcher(self._compiled_for_values)

    if TYPE_CHECKING:
        # Declared as any callable so that a subclass may name its inputs
        # (`def output_types(self, x: str, y: str) -> list[str]`) and still type-check.
        output_types: Callable[..., Sequence[str]]
    else:

        def output_types(self, *input_types: str) -> list[str]:
            """The output type strings for these input type strings (``"float64[:]"``,
            ``"int64"``); raise ``TypeError`` for inputs the C code cannot take."""
            raise NotImplementedError(f"{type(self).__name__} must define output_types()")

    def c_compile_args(self) -> list[str]:
        """Flags added to the compile of this op's modules (``["-DN=4"]``)."""
        return []

    def c_header_dirs(self) -> list[str]:
        """Folders searched for the headers the op includes (``-I``)."""
        return []

    def c_libraries(self) -> list[str]:
        """Libraries the op's modules link (``["m"]`` for ``-lm``)."""
        return []

    def c_lib_dirs(self) -> list[str]:
        """Folders searched for those libraries (``-L``, and the run path of the module)."""
        return []

    def c_headers(self) -> list[str]:
        """Headers included before the op's code (``["cblas.h"]``, ``["<x.h>"]``)."""
        return []

    def build_flags(self) -> dict[str, list[str]]:
        """What ``c_compile_args()``, ``c_header_dirs()``, ``c_libraries()``, ``c_lib_dirs()``
        and ``c_headers()`` give, checked, each folder absolute."""
        values = {name: getattr(self, name)() for name in BUILD_FLAGS}
        return build_flags(values, folder_of_class(type(self))[0])

    @classmethod
    def get_path(cls, f: Path) -> Path:
        """Resolves a relative path against the folder of the file that defines ``cls`` (the
        working directory for a class defined in a notebook cell or at a prompt)."""
        return relative_to_class(cls, Path(f))

    def _params(self) -> dict[str, tuple[str, Any]]:
        missing = [name for name in self.params if not hasattr(self, name)]
        if missing:
            raise AttributeError(f"{type(self).__name__}: missing params attributes {missing}")
        return {name: (type_, getattr(self, name)) for name, type_ in self.params.items()}

    def _files(self) -> list[Path]:
        """``func_files`` as a list of Paths (a class attribute may give a single path)."""
        files = self.func_files
        return [Path(files)] if isinstance(files, (str, Path)) else [Path(f) for f in files]

    @entry_point
    def compiled(self, *input_types: str) -> Any:
        """The compiled op for these input types: built once, then reused.

        Args:
            *input_types: One type string per input.

        Returns:
            The ``CompiledOp`` for them (calling the op finds it by its arguments' types).
        """
        params = self._params()
        flags = self.build_flags()
        key = (
            input_types,
            tuple((k, t, _hashable(v)) for k, (t, v) in params.items()),
            tuple(tuple(items) for items in flags.values()),
        )
        op: Any = self._compiled.get(key)  # a CompiledOp; its stub lacks the `info` getter
        if op is None:
            outputs = list(self.output_types(*input_types))
            start = time.perf_counter()
            if self._loaded is None:  # read once; every signature builds from the same texts
                self._loaded = load([self.get_path(f) for f in self._files()])
            op = build(
                self._loaded,
                self.func_name,
                list(input_types),
                outputs,
                params or None,
                name=type(self).__name__,
                num_inputs=self._cop_num_inputs,
                num_outputs=self._cop_num_outputs,
                check_input=bool(self.check_input),
                language=self.language,
                release_gil=bool(self.release_gil),
                c_compile_args=flags["c_compile_args"],
                c_header_dirs=flags["c_header_dirs"],
                c_libraries=flags["c_libraries"],
                c_lib_dirs=flags["c_lib_dirs"],
                c_headers=flags["c_headers"],
            )
            # The core logs each compile (one INFO record with its time); a cache hit only here.
            if not op.info.get("compiled"):
                log.debug(
                    "%s(%s) -> %s: loaded from cache in %.3f s",
                    type(self).__name__,
                    ", ".join(input_types),
                    ", ".join(outputs),
                    time.perf_counter() - start,
                )
            self._compiled[key] = op
        return op

    def _compiled_for_values(self, *inputs: Any):
        batch = _batched.standalone_call(self, inputs)  # inputs beyond the signature's core
        return batch if batch is not None else self.compiled(*(type_of(v) for v in inputs))

    def __call__(self, *inputs: Any) -> Any:
        """Runs the op: one array for one output, a tuple for several (typed ``Any``, as NumPy
        types its ufuncs, so callers need not narrow a union at every call)."""
        # The dispatcher finds the compiled op for these argument types in C; only types it
        # has not seen reach Python (_compiled_for_values). Not @entry_point: no extra call on
        # this path, and a `try` costs nothing until something raises.
        try:
            return self._dispatch(*inputs)
        except Exception as error:
            cut_library_frames(error)
            raise

    def __repr__(self) -> str:
        # What makes this op this op: its files, function and params (the compiled signatures
        # are in `compiled(...)` and change as it is called).
        files = [str(f) for f in self._files()]
        parts = [f"func_files={files!r}", f"func_name={self.func_name!r}"]
        parts += [f"{name}={getattr(self, name, '<unset>')!r}" for name in self.params]
        return f"{type(self).__name__}({', '.join(parts)})"

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in type(self).params and "_dispatch" in self.__dict__:
            self._dispatch.forget()  # the params are compiled into the ops it knows

    def __getstate__(self) -> dict:
        # No C handles: a new process reads the files and builds (or finds) the modules again.
        return {
            k: v for k, v in self.__dict__.items() if k not in ("_compiled", "_loaded", "_dispatch")
        }

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._compiled = Lru(_SIGNATURES)
        self._loaded = None
        self._dispatch = _core.Dispatcher(self._compiled_for_values)


# The methods of PyTensor's COp this class calls.
_HONOURED = frozenset(BUILD_METHODS)


def _refuse_unhonoured_methods(cls: type) -> None:
    """Raises ``TypeError`` when ``cls`` defines a PyTensor ``c_*`` method (or one that reshapes
    the expansion) this class does not call: it would be silently ignored."""
    ignored = sorted(
        name
        for name in dir(cls)
        if (name.startswith("c_") or name in RESHAPING_METHODS)
        and name not in _HONOURED
        and not hasattr(ExternalCOp, name)
        and callable(getattr(cls, name, None))
    )
    if ignored:
        listed = ", ".join(f"{name}()" for name in ignored)
        raise TypeError(
            f"{cls.__name__} defines {listed}, which libsection.ExternalCOp does not call: its C "
            "code comes from its section files only (put it in a section: support_code, code, "
            "init_code_struct, ...) and what the build needs from c_compile_args(), "
            "c_header_dirs(), c_libraries(), c_lib_dirs() and c_headers(). To keep such methods, "
            "derive from libsection.pytensor.ExternalCOp, which calls every c_* method"
        )


def _hashable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    return value
