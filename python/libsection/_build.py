"""Building compiled ops: ``build()`` for section files, ``Module`` for ops and types in Python.

Both return a ``CompiledOp``: a C-implemented callable taking one value per input and
returning the output (a tuple when there are several). Modules are cached on disk (see
``section-cache``); a new process finds them there without compiling.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from . import _core
from ._core import LoadedSections
from ._load import load
from ._progress import Progress, progress_stream
from ._types import type_of

CompileError = _core.CompileError
LinkError = _core.LinkError
CompiledOp = _core.CompiledOp

__all__ = ["CompileError", "CompiledOp", "LinkError", "Module", "build", "build_many"]


def checked_language(owner: str, language: object) -> str:
    """``language`` as an op declares it, ``"c++"`` (the default) or ``"c"``; anything else
    raises ``ValueError`` naming ``owner`` (the op) and the accepted values."""
    description = _core.OpDescription()
    description.name = owner
    description.language = str(language)
    return description.language


def _sections(files) -> tuple[LoadedSections, str]:
    """The loaded sections and the default op name (the first file's stem)."""
    if isinstance(files, LoadedSections):
        names = files.files
        return files, os.path.splitext(os.path.basename(names[0]))[0] if names else "SectionOp"
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    paths = list(files)
    if not paths:
        raise ValueError("build() needs at least one section file")
    # Shown in messages and the generated source: printable UTF-8.
    stem = os.path.splitext(os.path.basename(os.fsdecode(paths[0])))[0]
    name = stem.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return load(paths), name  # raises SectionError (or OSError) for files it cannot use


def _type_strings(kind: str, types) -> list[str]:
    if isinstance(types, str):
        types = [types]
    out = []
    for i, t in enumerate(types):
        if not isinstance(t, str):
            raise TypeError(f"{kind}[{i}] must be a type string such as 'float64[:]', got {t!r}")
        out.append(t)
    return out


def _param_type(name: str, value) -> str:
    """The type string of a params value given without one: the rule inputs follow."""
    try:
        return type_of(value)
    except TypeError:
        raise TypeError(
            f"params[{name!r}]: cannot infer a C type for {type(value).__name__}; "
            "give (type string, value), e.g. ('int32', 3)"
        ) from None


#: What an op adds to its module's build, by PyTensor's names: ``build()``'s keyword
#: arguments and ``ExternalCOp``'s methods of these names.
BUILD_FLAGS = ("c_compile_args", "c_header_dirs", "c_libraries", "c_lib_dirs", "c_headers")
_FOLDER_FLAGS = ("c_header_dirs", "c_lib_dirs")


def build_flags(flags: Mapping[str, object], base: Path | None = None) -> dict[str, list[str]]:
    """``flags`` (``c_compile_args``, ...: a string or a list of strings each) checked as
    lists of strings, folders made absolute (relative ones from ``base``, by default the
    working directory: the cache key names the folder, so a relative one would mean another
    folder elsewhere). A folder that does not exist raises ``FileNotFoundError`` naming it (the
    compiler would ignore it, and fail later on a header it does not find). What each string
    may hold is checked by the core, as ``LIBSECTION_CXXFLAGS``'s words are."""
    out: dict[str, list[str]] = {}
    for name in BUILD_FLAGS:
        value = flags.get(name)
        if value is None:
            out[name] = []
            continue
        if isinstance(value, (str, os.PathLike)):
            value = [value]
        if not isinstance(value, Iterable):
            raise TypeError(f"{name} must be a list of strings, got {type(value).__name__}")
        items = []
        for i, item in enumerate(value):
            if name in _FOLDER_FLAGS and isinstance(item, os.PathLike):
                item = os.fspath(item)
            if not isinstance(item, str):
                raise TypeError(f"{name}[{i}] must be a string, got {item!r}")
            if name in _FOLDER_FLAGS and item:
                folder = Path(item) if Path(item).is_absolute() else (base or Path.cwd()) / item
                if not folder.is_dir():
                    raise FileNotFoundError(
                        errno.ENOENT, f"{name}[{i}]: no folder {item!r} (looked at {folder})"
                    )
                item = os.path.normpath(folder)
            items.append(item)
        out[name] = items
    return out


def _params(params) -> list[tuple[str, str, object]]:
    if params is None:
        return []
    if not isinstance(params, Mapping):
        raise TypeError("params must be a dict: field name -> value or (type string, value)")
    fields = []
    for name, spec in params.items():
        if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
            fields.append((name, spec[0], spec[1]))
        else:
            fields.append((name, _param_type(name, spec), spec))
    return fields


def build(
    files,
    func_name: str | None = None,
    inputs: Sequence[str] = (),
    outputs: Sequence[str] = (),
    params: Mapping | None = None,
    *,
    name: str | None = None,
    num_inputs: int | None = None,
    num_outputs: int | None = None,
    check_input: bool = True,
    language: str = "c++",
    progress: bool | None = None,
    c_compile_args: Sequence[str] | None = None,
    c_header_dirs: Sequence[str | os.PathLike[str]] | None = None,
    c_libraries: Sequence[str] | None = None,
    c_lib_dirs: Sequence[str | os.PathLike[str]] | None = None,
    c_headers: Sequence[str] | None = None,
) -> CompiledOp:
    """Compiles the op implemented by section ``files`` and returns it as a callable.

    ``files`` is a path, a list of paths, or sections already loaded (``libsection.load``), so an
    op that holds its texts never has the files read again.

    ``inputs``/``outputs`` are type strings: ``"float64[:]"`` (1-d tensor),
    ``"float32[:,:]"``, ``"int64"`` (scalar), ``"object"`` (any Python object).
    ``params`` maps field names to values, or to ``(type string, value)``; the op sees them
    as ``PARAMS->field``. Wrong dtypes or dimensions raise ``TypeError`` before the op runs.
    ``name`` (default: the first file's name without extension) names the op in messages.
    A compile error raises ``CompileError`` pointing at the section file's lines.
    ``language="c"`` declares the files C: they are checked as C (section-lint's SL208 and
    SL209, raised as ``LinkError``) and the module is compiled as C by ``$CC``.
    A compile that takes over a second shows ``compiling NAME (1.2 s)`` on a terminal's stderr
    (``progress``: None decides so, True always, False never; see ``build_many``).
    ``c_compile_args``, ``c_header_dirs``, ``c_libraries``, ``c_lib_dirs`` and ``c_headers``
    are what PyTensor's methods of those names give: flags, folders searched for headers and
    libraries (relative ones from the working directory), libraries linked (``"m"`` for
    ``-lm``) and headers included. They are part of the module's cache key, and each string
    is checked as ``LIBSECTION_CXXFLAGS``'s words are (a bad one raises ``LinkError``).
    """
    with Progress(1, progress_stream(progress)) as shown:
        return _build(
            shown,
            1,
            files,
            func_name,
            inputs,
            outputs,
            params,
            name=name,
            num_inputs=num_inputs,
            num_outputs=num_outputs,
            check_input=check_input,
            language=language,
            c_compile_args=c_compile_args,
            c_header_dirs=c_header_dirs,
            c_libraries=c_libraries,
            c_lib_dirs=c_lib_dirs,
            c_headers=c_headers,
        )


def _build(
    shown: Progress,
    number: int,
    files,
    func_name: str | None = None,
    inputs: Sequence[str] = (),
    outputs: Sequence[str] = (),
    params: Mapping | None = None,
    *,
    name: str | None = None,
    num_inputs: int | None = None,
    num_outputs: int | None = None,
    check_input: bool = True,
    language: str = "c++",
    **flags: object,
) -> CompiledOp:
    """``build()`` as task ``number`` of ``shown``; ``flags`` are its ``c_*`` lists."""
    unknown = set(flags) - set(BUILD_FLAGS)
    if unknown:
        raise TypeError(f"build() got unexpected keyword arguments {sorted(unknown)}")
    checked_flags = build_flags(flags)
    loaded, default_name = _sections(files)
    input_types = _type_strings("inputs", inputs)
    output_types = _type_strings("outputs", outputs)
    if not output_types:
        raise ValueError("build() needs at least one output type, e.g. outputs=['float64[:]']")
    if name is None:  # shown in messages and the generated source
        name = default_name
    with shown.task(number, f"compiling {name}"):  # the line appears only after a second
        return _core.build_sections(
            loaded,
            input_types,
            output_types,
            func_name=func_name,
            params=_params(params),
            name=name,
            num_inputs=num_inputs,
            num_outputs=num_outputs,
            check_input=check_input,
            language=checked_language(name, language),
            c_compile_args=checked_flags["c_compile_args"],
            c_header_dirs=checked_flags["c_header_dirs"],
            c_libraries=checked_flags["c_libraries"],
            c_lib_dirs=checked_flags["c_lib_dirs"],
            c_headers=checked_flags["c_headers"],
        )


def build_many(
    specs: Sequence[Mapping], *, jobs: int | None = None, progress: bool | None = None
) -> list[CompiledOp]:
    """Builds several ops at once: ``specs`` holds the keyword arguments of one ``build()``
    call each. Compiles run concurrently (one compiler process each, up to ``jobs``, by
    default the number of CPUs; different modules share no lock) and the compiled ops come
    back in the order given. The first failure is raised once every build has finished.

    While a compile takes over a second, stderr shows one line that is erased at the end,
    ``[3/8] compiling vector_times_vector (1.2 s)``: when ``progress`` is None, only on a
    terminal or in a notebook, and not when the ``libsection`` logger is set above INFO or
    ``LIBSECTION_PROGRESS=0``; True shows it on any stderr, False never. It is not a log
    record: the logger still gets exactly one record per compile."""
    from concurrent.futures import ThreadPoolExecutor

    specs = [dict(spec) for spec in specs]
    for spec in specs:
        if "progress" in spec:
            raise TypeError("build_many(): give progress= to build_many, not in a spec")
    workers = max(1, min(len(specs), jobs or os.cpu_count() or 1))
    group = _core.BuildGroup()  # this call's builds, and no other thread's

    def build_in_group(shown: Progress, number: int, spec: Mapping) -> CompiledOp:
        with group:
            return _build(shown, number, **spec)

    try:
        with (
            Progress(len(specs), progress_stream(progress)) as shown,
            ThreadPoolExecutor(workers, thread_name_prefix="libsection-build") as pool,
        ):
            futures = [
                pool.submit(build_in_group, shown, number, spec)
                for number, spec in enumerate(specs, start=1)
            ]
    except KeyboardInterrupt:  # reaches this thread only: stop the compiles of the workers too
        group.cancel()
        raise
    return [f.result() for f in futures]


class Module:
    """A module of one or more applies of ops written in Python, compiled as one unit.

    Types are type strings or objects with the CType methods (``c_declare(name, sub)``,
    ``c_init``, ``c_extract``, ``c_sync``, ``c_cleanup``, ...), as PyTensor's ``CType`` has.
    Ops have ``c_code(name, inputs, outputs, sub)`` and optionally the other ``c_*`` methods
    (``c_code_cleanup``, ``c_support_code``, ``c_init_code_struct(name, sub)``, ...).

    >>> m = Module("add_mul")
    >>> x, y, z = m.input(double), m.input(double), m.input(double)
    >>> (a,) = m.apply(add, [x, y], [double])
    >>> (b,) = m.apply(mul, [a, z], [double])
    >>> f = m.compile(outputs=[b])
    """

    def __init__(self, name: str = "module"):
        self.name = name
        self._graph = _core.Graph()

    def input(self, type, label: str = "") -> int:
        return self._graph.add_input(type, label)

    def apply(self, op, inputs: Sequence[int], output_types: Sequence) -> list[int]:
        return self._graph.add_apply(op, list(inputs), list(output_types))

    def source(self, outputs: Sequence[int]) -> str:
        """The generated C++ source, for reading."""
        self._mark_outputs(outputs)
        return self._graph.source()

    def compile(self, outputs: Sequence[int]) -> CompiledOp:
        self._mark_outputs(outputs)
        return _core.link(self._graph, [], self.name)

    def _mark_outputs(self, outputs: Sequence[int]) -> None:
        marked = getattr(self, "_outputs", None)
        if marked is None:
            for v in outputs:
                self._graph.add_output(v)
            self._outputs = list(outputs)
        elif marked != list(outputs):
            raise ValueError(f"this module's outputs are already {marked}")
