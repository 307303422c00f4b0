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
from typing import TYPE_CHECKING, Any

from . import _core
from ._core import CompiledOp, LoadedSections
from ._load import PathLike, load
from ._progress import Progress, progress_stream
from ._protocol import BUILD_METHODS
from ._traceback import entry_point
from ._types import type_of

if TYPE_CHECKING:  # what the core's classes hold, for type checkers and the API reference

    class LinkError(ValueError):
        r"""An op that cannot be built as described: its sections, types, flags or toolchain.

        Attributes:
            diagnostics: What is wrong, at the section files' lines where it has one.

        Examples:
            >>> import libsection
            >>> from pathlib import Path
            >>> _ = Path("c.c").write_text("#section code\nOUTPUT_0 = static_cast<int>(INPUT_0);")
            >>> try:  # declared C, holding C++
            ...     libsection.build("c.c", inputs=["int64"], outputs=["int64"], language="c")
            ... except libsection.LinkError as e:
            ...     print(e.diagnostics[0].code, e.diagnostics[0].message)
            SL208 `static_cast` is C++: write a C cast, `(type)value`
        """

        diagnostics: list[_core.Diagnostic]

    class CompileError(RuntimeError):
        r"""The compiler refused the op's code. The message names the section files' lines
        (``op.c:2:12: error: ...``).

        Attributes:
            diagnostics: The compiler's errors, at the section files' lines.
            kept_dir: The folder kept with the generated source, the command and the
                compiler's full log.

        Examples:
            >>> import libsection
            >>> from pathlib import Path
            >>> _ = Path("typo.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_O;\n")
            >>> try:
            ...     libsection.build("typo.c", inputs=["float64"], outputs=["float64"])
            ... except libsection.CompileError as e:
            ...     d = e.diagnostics[0]
            ...     print(d.filename, d.line, d.severity)
            typo.c 2 error
        """

        diagnostics: list[_core.Diagnostic]
        kept_dir: str

else:
    CompileError = _core.CompileError
    LinkError = _core.LinkError
    # The errors users catch carry the name they import them by: a traceback shows
    # `libsection.CompileError`, and a pickled one (a worker process's) unpickles as that class.
    CompileError.__module__ = LinkError.__module__ = "libsection"

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
#: arguments and ``ExternalCOp``'s methods of these names (``_protocol.BUILD_METHODS``).
BUILD_FLAGS: tuple[str, ...] = BUILD_METHODS
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


@entry_point
def build(
    files: PathLike | bytes | Iterable[PathLike | bytes] | LoadedSections,
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
    release_gil: bool = True,
) -> CompiledOp:
    r"""Compiles the op implemented by section ``files`` and returns it as a callable.

    The module is cached on disk: a new process finds it there without compiling. A compile
    that takes over a second shows ``compiling NAME (1.2 s)`` on a terminal's stderr.

    Args:
        files: A path, a list of paths, or sections already loaded (``libsection.load``), so
            an op that holds its texts never has the files read again.
        func_name: The function the op calls with the inputs, the addresses of the outputs
            and the params (``"APPLY_SPECIFIC(f)"``); without it, a ``code`` section is the
            body of the op.
        inputs: Type strings: ``"float64[:]"`` (1-d tensor), ``"float32[:,:]"``, ``"int64"``
            (scalar), ``"object"`` (any Python object). Wrong dtypes or dimensions raise
            ``TypeError`` when the op is called, before its code runs.
        outputs: Type strings, at least one.
        params: Field names to values, or to ``(type string, value)``; the op sees them as
            ``PARAMS->field``.
        name: Names the op in messages (default: the first file's name without extension).
        num_inputs: Pads the ``func_name`` call's inputs with ``NULL`` to this many.
        num_outputs: Pads the call's outputs with ``NULL`` to this many.
        check_input: Defines the ``DTYPE_``/``TYPENUM_``/``ITEMSIZE_`` macros of the inputs
            and outputs.
        language: ``"c++"`` or ``"c"``: C files are checked as C (section-lint's SL208 and
            SL209) and the module is compiled as C by ``$CC``.
        progress: Show the compile's progress line: None on a terminal or in a notebook,
            True always, False never (see ``build_many``).
        c_compile_args: Compile flags (``["-DN=4"]``), as PyTensor's method of that name
            gives them.
        c_header_dirs: Folders searched for headers (relative ones from the working
            directory).
        c_libraries: Libraries linked (``"m"`` for ``-lm``).
        c_lib_dirs: Folders searched for libraries (relative ones from the working
            directory).
        c_headers: Headers included before the op's code.
        release_gil: ``False`` keeps the GIL while the op's code runs; by default the code
            runs without it where the linker sees that is safe (README, "Threads").

    Returns:
        The compiled op: call it with one value per input; it returns the output (a tuple
        when there are several).

    Raises:
        SectionError: A section file the reference loader would refuse.
        LinkError: An op that cannot be built as described (a bad type string or flag, C++
            in a file declared C); ``.diagnostics`` says where.
        CompileError: The compiler refused the code; the message names the section file's
            lines.
        TypeError: A type string or a flag that is not a string.
        ValueError: No files or no outputs.
        FileNotFoundError: A section file or a folder of ``c_header_dirs``/``c_lib_dirs``
            that does not exist.

    Examples:
        >>> import libsection
        >>> from pathlib import Path
        >>> _ = Path("twice.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n")
        >>> twice = libsection.build("twice.c", inputs=["float64"], outputs=["float64"])
        >>> print(twice(1.5))
        3.0
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
            release_gil=release_gil,
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
    release_gil: bool = True,
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
            release_gil=bool(release_gil),
        )


@entry_point
def build_many(
    specs: Sequence[Mapping[str, Any]], *, jobs: int | None = None, progress: bool | None = None
) -> list[CompiledOp]:
    r"""Builds several ops at once, their compiles running concurrently (one compiler process
    each; different modules share no lock).

    While a compile takes over a second, stderr shows one line that is erased at the end,
    ``[3/8] compiling vector_times_vector (1.2 s)``. It is not a log record: the logger still
    gets exactly one record per compile.

    Args:
        specs: The keyword arguments of one ``build()`` call each (without ``progress``).
        jobs: Compiles at a time (default: the number of CPUs).
        progress: Show the progress line: None on a terminal or in a notebook, unless the
            ``libsection`` logger is set above INFO or ``LIBSECTION_PROGRESS=0``; True on any
            stderr; False never.

    Returns:
        The compiled ops, in the order of ``specs``.

    Raises:
        Exception: What the first failing ``build()`` raised (``CompileError``, ...), once
            every build has finished.
        TypeError: A spec with ``progress``.

    Examples:
        >>> import libsection
        >>> from pathlib import Path
        >>> _ = Path("twice.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n")
        >>> ops = libsection.build_many([
        ...     {"files": "twice.c", "inputs": ["float64"], "outputs": ["float64"]},
        ...     {"files": "twice.c", "inputs": ["int32"], "outputs": ["int32"]},
        ... ])
        >>> [op(3).item() for op in ops]
        [6.0, 6]
    """
    from concurrent.futures import ThreadPoolExecutor, wait

    specs = [dict(spec) for spec in specs]
    for spec in specs:
        if "progress" in spec:
            raise TypeError("build_many(): give progress= to build_many, not in a spec")
    workers = max(1, min(len(specs), jobs or os.cpu_count() or 1))
    group = _core.BuildGroup()  # this call's builds, and no other thread's

    def build_in_group(shown: Progress, number: int, spec: Mapping) -> CompiledOp:
        with group:
            return _build(shown, number, **spec)

    pool = ThreadPoolExecutor(workers, thread_name_prefix="libsection-build")
    try:
        with Progress(len(specs), progress_stream(progress)) as shown:
            futures = [
                pool.submit(build_in_group, shown, number, spec)
                for number, spec in enumerate(specs, start=1)
            ]
            wait(futures)
    except BaseException:
        # An interrupt reaches this thread only, wherever it lands (here or while submitting):
        # the workers' builds stop before anything waits for them, since a worker may wait on
        # what the caller holds (a lock, another thread's build).
        group.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [f.result() for f in futures]


class Module:
    """A module of one or more applies of ops written in Python, compiled as one unit.

    Types are type strings or objects with the CType methods (``c_declare(name, sub)``,
    ``c_init``, ``c_extract``, ``c_sync``, ``c_cleanup``, ...), as PyTensor's ``CType`` has.
    Ops have ``c_code(name, inputs, outputs, sub)`` and optionally the other ``c_*`` methods
    (``c_code_cleanup``, ``c_support_code``, ``c_init_code_struct(name, sub)``, ...).

    Args:
        name: Names the module in messages and in the compile cache's listing.

    Examples:
        >>> import libsection
        >>> class Add:
        ...     def c_code(self, name, inputs, outputs, sub):
        ...         return f"{outputs[0]} = {inputs[0]} + {inputs[1]};"
        >>> m = libsection.Module("add3")
        >>> x, y, z = m.input("float64"), m.input("float64"), m.input("float64")
        >>> (a,) = m.apply(Add(), [x, y], ["float64"])
        >>> (b,) = m.apply(Add(), [a, z], ["float64"])
        >>> f = m.compile(outputs=[b])
        >>> print(f(1.0, 2.0, 3.0))
        6.0
    """

    def __init__(self, name: str = "module") -> None:
        self.name = name
        self._graph = _core.Graph()

    def input(self, type: Any, label: str = "") -> int:
        """Adds an input of the module.

        Args:
            type: A type string or an object with the CType methods.
            label: Names the input in the generated source.

        Returns:
            The input's variable, for ``apply``.
        """
        return self._graph.add_input(type, label)

    def apply(self, op: Any, inputs: Sequence[int], output_types: Sequence[Any]) -> list[int]:
        """Applies ``op`` to variables of the module.

        Args:
            op: An object with ``c_code(name, inputs, outputs, sub)`` and optionally the other
                ``c_*`` methods.
            inputs: The variables it takes (inputs of the module or outputs of applies).
            output_types: Its outputs' types, type strings or CType objects.

        Returns:
            Its output variables.
        """
        return self._graph.add_apply(op, list(inputs), list(output_types))

    def source(self, outputs: Sequence[int]) -> str:
        """The generated C++ source, for reading.

        Args:
            outputs: The variables the module returns.

        Returns:
            The module's source.
        """
        self._mark_outputs(outputs)
        return self._graph.source()

    def compile(self, outputs: Sequence[int]) -> CompiledOp:
        """Compiles the module (or finds it in the compile cache).

        Args:
            outputs: The variables the compiled op returns.

        Returns:
            The compiled op: called with one value per input, it returns the outputs (a tuple
            when there are several).

        Raises:
            CompileError: The compiler refused the module's code.
        """
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
