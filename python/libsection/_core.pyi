"""
libsection's C++ core: parser, expander, linker core
"""
from __future__ import annotations
import collections.abc
from libsection import CompileError
from libsection import LinkError
import typing
__all__: list[str] = ['BatchPlan', 'Batched', 'BuildGroup', 'CompileError', 'CompiledOp', 'Diagnostic', 'Dispatcher', 'ExpandOptions', 'ExpansionMethod', 'Graph', 'LinkError', 'LoadedSections', 'NodeContext', 'NodeOp', 'OpDescription', 'ParamField', 'ParamsSpec', 'TypeSpec', 'build_sections', 'cache_dir', 'derivative_node_op', 'derivative_refusals', 'dropin_node_op', 'expand', 'expansion_methods', 'link', 'link_cached', 'load_sections', 'load_support_library', 'load_texts', 'main_function_takes', 'marker_style', 'native_entry', 'op_cache_version', 'params_spec', 'parse_gufunc_signature', 'parse_params', 'parse_text', 'parse_type', 'parse_types', 'prepare', 'prepare_together', 'raise_expansion_errors', 'recordings_held', 'recordings_swept', 'relocate_line_directives', 'single_node_context', 'tape_bytes']
class Diagnostic:
    """
    A problem found in a section file: a stable code (``SL201``), a severity, a message, and a
    location (1-based line and column; columns count bytes of the UTF-8 text).
    
    Examples:
        >>> import libsection
        >>> text = '''#section suport_code
        ... int x;
        ... '''
        >>> d = libsection.parse_text(text, "op.c").diagnostics[0]
        >>> d.code, d.severity, d.line, d.column, d.replacement
        ('SL201', 'error', 1, 10, 'support_code')
        >>> print(d.render())
        op.c:1:10: error: Unknown section type (in file op.c): suport_code [SL201]
        ...
    """
    def __repr__(self) -> str:
        ...
    def __str__(self) -> str:
        ...
    def render(self) -> str:
        """
        The diagnostic in clang style: location, message, source line, caret, notes.
        """
    @property
    def code(self) -> str:
        """
        The rule's stable code (``SL201``).
        """
    @property
    def column(self) -> int:
        """
        1-based column of the start, in bytes of the UTF-8 text.
        """
    @property
    def end_column(self) -> int:
        """
        1-based column of the end, in bytes.
        """
    @property
    def end_line(self) -> int:
        """
        1-based line of the end.
        """
    @property
    def filename(self) -> str | None:
        """
        The file, as the caller named it; None without a location.
        """
    @property
    def fix(self) -> str | None:
        """
        What the suggested fix does, in words; None without one.
        """
    @property
    def line(self) -> int:
        """
        1-based line of the start.
        """
    @property
    def message(self) -> str:
        """
        What is wrong, in one line.
        """
    @property
    def notes(self) -> list[str]:
        """
        Further explanations, one per note.
        """
    @property
    def replacement(self) -> str | None:
        """
        The text that replaces the range to fix it; None without a fix.
        """
    @property
    def severity(self) -> str:
        """
        ``"error"``, ``"warning"`` or ``"info"``.
        """
class LoadedSections:
    """
    Sections merged from one or more files with the reference ``load_c_code`` semantics, as
    ``libsection.load`` and ``libsection.parse_text`` return them; ``libsection.build`` takes them
    in place of files.
    
    Examples:
        >>> import libsection
        >>> text = '''#section support_code
        ... static double twice(double x) { return 2 * x; }
        ... #section code
        ... OUTPUT_0 = twice(INPUT_0);
        ... '''
        >>> loaded = libsection.parse_text(text, "twice.c")
        >>> list(loaded.sections), loaded.files, loaded.error
        (['support_code', 'code'], ['twice.c'], None)
        >>> op = libsection.build(loaded, inputs=["float64"], outputs=["float64"])
        >>> print(op(1.5))
        3.0
    """
    def __repr__(self) -> str:
        ...
    @property
    def blocks(self) -> list:
        """
        every block that makes up the sections, with its file and lines
        """
    @property
    def codes(self) -> list[str]:
        """
        the files' texts, newlines normalised (the reference's func_codes)
        """
    @property
    def diagnostics(self) -> list[Diagnostic]:
        """
        every finding of the parse: errors, warnings and notes
        """
    @property
    def error(self) -> typing.Any:
        """
        None, or a LoadError(errno, message, path) for the error the reference raises (a named tuple)
        """
    @property
    def files(self) -> list[str]:
        """
        the files' names, as the caller gave them
        """
    @property
    def sections(self) -> dict:
        """
        dict tag -> text, in order of first appearance
        """
class TypeSpec:
    """
    A variable type in signature syntax: tensor ``float64[:]``, scalar ``int64`` or ``object``.
    """
    class Kind:
        """
        Members:
        
          tensor
        
          scalar
        
          generic
        """
        __members__: typing.ClassVar[dict[str, TypeSpec.Kind]]
        generic: typing.ClassVar[TypeSpec.Kind]
        scalar: typing.ClassVar[TypeSpec.Kind]
        tensor: typing.ClassVar[TypeSpec.Kind]
        @typing.overload
        def __eq__(self, other: TypeSpec.Kind) -> bool:
            ...
        @typing.overload
        def __eq__(self, other: typing.Any) -> bool:
            ...
        def __getstate__(self) -> int:
            ...
        def __hash__(self) -> int:
            ...
        def __index__(self) -> int:
            ...
        def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
            ...
        def __int__(self) -> int:
            ...
        @typing.overload
        def __ne__(self, other: TypeSpec.Kind) -> bool:
            ...
        @typing.overload
        def __ne__(self, other: typing.Any) -> bool:
            ...
        def __repr__(self) -> str:
            ...
        def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
            ...
        def __str__(self) -> str:
            ...
        @property
        def name(self) -> str:
            ...
        @property
        def value(self) -> int:
            ...
    def __repr__(self) -> str:
        ...
    def __str__(self) -> str:
        ...
    def c_element_type(self) -> str:
        ...
    def pytensor_str(self) -> str:
        ...
    @property
    def dtype(self) -> str:
        ...
    @property
    def dtype_name(self) -> str | None:
        ...
    @property
    def kind(self) -> TypeSpec.Kind:
        ...
    @property
    def ndim(self) -> int:
        ...
class ParamField:
    c_element_type: str
    name: str
    def __init__(self, name: str, c_element_type: str) -> None:
        ...
class ParamsSpec:
    """
    An op's ParamsType: struct name and fields.
    """
    type_name: str
    def __init__(self, type_name: str, fields: collections.abc.Sequence[ParamField]) -> None:
        ...
    @property
    def fields(self) -> list[ParamField]:
        ...
    @fields.setter
    def fields(self, arg0: collections.abc.Sequence[ParamField]) -> None:
        ...
class OpDescription:
    """
    What an op is, whatever node it is applied to (names as in the C++ ``section::OpDescription``).
    List fields are copied on assignment: assign whole lists.
    """
    check_input: bool
    func_name: str | None
    has_params: bool
    name: str
    params: ParamsSpec | None
    def __init__(self) -> None:
        ...
    @property
    def inputs(self) -> list[TypeSpec] | None:
        ...
    @inputs.setter
    def inputs(self, arg0: collections.abc.Sequence[TypeSpec] | None) -> None:
        ...
    @property
    def language(self) -> str:
        """
        ``"c++"`` (the default) or ``"c"``: what the op's sections are written in; anything else is a ``ValueError`` naming the op (``name``).
        """
    @language.setter
    def language(self, arg1: str) -> None:
        ...
    @property
    def num_inputs(self) -> int | None:
        ...
    @num_inputs.setter
    def num_inputs(self, arg0: typing.SupportsInt | typing.SupportsIndex | None) -> None:
        ...
    @property
    def num_outputs(self) -> int | None:
        ...
    @num_outputs.setter
    def num_outputs(self, arg0: typing.SupportsInt | typing.SupportsIndex | None) -> None:
        ...
    @property
    def outputs(self) -> list[TypeSpec] | None:
        ...
    @outputs.setter
    def outputs(self, arg0: collections.abc.Sequence[TypeSpec] | None) -> None:
        ...
    @property
    def release_gil(self) -> bool:
        """
        Whether the op's code may run without the GIL where the linker sees that is safe (README, "Threads"); ``True`` by default.
        """
    @release_gil.setter
    def release_gil(self, arg0: bool) -> None:
        ...
class NodeContext:
    """
    One application of an op: C names, dtypes and ``sub`` dicts (names as in the C++
    ``section::NodeContext``). List and dict fields are copied on assignment: assign whole values.
    """
    call_macros: tuple[str, str] | None
    function_args: str | None
    macros: tuple[str, str] | None
    node_name: str
    def __init__(self) -> None:
        ...
    @property
    def init_sub(self) -> dict[str, str]:
        ...
    @init_sub.setter
    def init_sub(self, arg0: collections.abc.Mapping[str, str]) -> None:
        ...
    @property
    def input_dtypes(self) -> list[str | None]:
        ...
    @input_dtypes.setter
    def input_dtypes(self, arg0: collections.abc.Sequence[str | None]) -> None:
        ...
    @property
    def inputs(self) -> list[str]:
        ...
    @inputs.setter
    def inputs(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def output_dtypes(self) -> list[str | None]:
        ...
    @output_dtypes.setter
    def output_dtypes(self, arg0: collections.abc.Sequence[str | None]) -> None:
        ...
    @property
    def outputs(self) -> list[str]:
        ...
    @outputs.setter
    def outputs(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def sub(self) -> dict[str, str]:
        ...
    @sub.setter
    def sub(self, arg0: collections.abc.Mapping[str, str]) -> None:
        ...
class ExpansionMethod:
    """
    A c_* method: its name, its section and the macros around it.
    """
    @property
    def apply_macros(self) -> bool:
        ...
    @property
    def io_macros(self) -> bool:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def sub_macros(self) -> bool:
        ...
    @property
    def tag(self) -> str:
        ...
class ExpandOptions:
    line_directives: bool
    newline_fix: bool
    resume_file: str
    def __init__(self) -> None:
        ...
    @property
    def line_paths(self) -> list[str]:
        ...
    @line_paths.setter
    def line_paths(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
class CompiledOp:
    """
    A compiled op, as ``build()`` returns it: call it with one value per input; it
    returns the output (a tuple when there are several). Wrong dtypes or dimensions raise
    ``TypeError`` before its code runs.
    
    Examples:
        >>> import libsection
        >>> from pathlib import Path
        >>> _ = Path("twice.c").write_text('''#section code
        ... OUTPUT_0 = 2 * INPUT_0;
        ... ''')
        >>> twice = libsection.build("twice.c", inputs=["float64"], outputs=["float64"])
        >>> twice
        <libsection compiled op twice(float64) -> float64>
        >>> print(twice(1.5))
        3.0
    """
    @staticmethod
    def cthunk(*args, **kwargs):
        """
        A capsule PyTensor's VM calls natively, as it calls CLinker's thunks (CLinker's calling convention: the function pointer, and data starting with the error list). Keep it as the thunk's `cthunk` attribute.
        """
    @staticmethod
    def run_in_place(*args, **kwargs):
        """
        Runs the op on the values its cells hold (an instance linked with `storage`), writing its outputs to them.
        """
    def __call__(self, *args, **kwargs):
        """
        Call self as a function.
        """
    def __repr__(self):
        """
        Return repr(self).
        """
class Batched:
    """
    Batched(compiled, plan): `compiled` (a CompiledOp with a batch entry) run once per row of inputs with leading batch dimensions, in one C loop, as `plan` (a BatchPlan) says. Called with the batch's inputs, returns its outputs (a tuple when there are several).
    """
    @staticmethod
    def __new__(type, *args, **kwargs):
        """
        Create and return a new object.  See help(type) for accurate signature.
        """
    @staticmethod
    def cthunk(*args, **kwargs):
        """
        cthunk(inputs, outputs): a capsule PyTensor's VM calls natively (CLinker's convention), running the batch on the values of the `inputs` storage cells and storing the outputs in the `outputs` cells. Keep it as the thunk's `cthunk` attribute.
        """
    def __call__(self, *args, **kwargs):
        """
        Call self as a function.
        """
    def __repr__(self):
        """
        Return repr(self).
        """
class BatchPlan:
    """
    How an op runs a batch (the plan ``Batched`` runs and the runtime's batch loop reads): its
    core dimensions from a gufunc signature, which batch dimensions of each input may broadcast at
    run time, and whether the op takes the whole batch itself.
    """
    @staticmethod
    def of_ranks(op_name: str, in_ndims: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], out_ndims: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], whole: bool = False) -> BatchPlan:
        """
        The plan of a batch already broadcast (JAX's): inputs and outputs of ``in_ndims`` and ``out_ndims`` core dimensions, each named apart.
        """
    def __init__(self, op_name: str, signature: str, whole: bool = False, masks: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None) -> None:
        """
        The plan of ``signature`` (``"(n),(n)->(n)"``) for the op ``op_name``. ``whole``:
        the op takes the whole batch (``vmap_method = "broadcast_all"``). ``masks``: per input, the
        batch dimensions (bit d for dimension d) that may broadcast at run time (PyTensor's rule);
        None for NumPy's (any length-1 dimension).
        """
    @property
    def op_name(self) -> str:
        ...
    @property
    def signature(self) -> str:
        ...
    @property
    def whole(self) -> bool:
        ...
class NodeOp:
    """
    An op whose code the linker core generates, for `Graph.add_apply`.
    """
class Graph:
    """
    A graph of applies for one compiled module. Types are type strings (`"float64[:]"`) or Python
    objects with the CType methods (`c_declare(name, sub)`, `c_extract`, ...); ops are Python
    objects with `c_code(name, inputs, outputs, sub)` and optionally the other `c_*` methods.
    """
    def __init__(self) -> None:
        ...
    def add_apply(self, op: typing.Any, inputs: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], output_types: collections.abc.Sequence[typing.Any], params: typing.SupportsInt | typing.SupportsIndex | None = None) -> list[int]:
        """
        Adds an apply; returns its output variables.
        """
    def add_constant(self, type: typing.Any, label: str = '') -> int:
        ...
    def add_input(self, type: typing.Any, label: str = '') -> int:
        ...
    def add_output(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def source(self) -> str:
        """
        The generated C++ source of the module.
        """
class BuildGroup:
    """
    The builds threads run for one caller, stopped together when it is interrupted (a signal reaches only the main thread). A thread's builds inside ``with group:`` belong to it; ``group.cancel()`` stops each of them, under way or started later (its compiler killed, KeyboardInterrupt raised in its thread). Other threads' builds go on.
    """
    def __enter__(self) -> BuildGroup:
        """
        The calling thread's builds belong to the group until the ``with`` block ends.
        """
    def __exit__(self, *args) -> None:
        """
        The calling thread's builds no longer belong to the group.
        """
    def __init__(self) -> None:
        ...
    def cancel(self) -> None:
        """
        Stops the group's builds.
        """
    @property
    def cancelled(self) -> bool:
        """
        Whether ``cancel()`` was called.
        """
class Dispatcher:
    """
    Dispatcher(miss): calls the compiled op for its arguments' types, found in a table keyed by each array's dtype, dimensions and byte order and each number's type; `miss(*args)` gives the compiled op for types not seen yet.
    """
    @staticmethod
    def __new__(type, *args, **kwargs):
        """
        Create and return a new object.  See help(type) for accurate signature.
        """
    @staticmethod
    def forget(*args, **kwargs):
        """
        Drops every compiled op found so far (e.g. after the op's params changed).
        """
    def __call__(self, *args, **kwargs):
        """
        Call self as a function.
        """
def build_sections(loaded: LoadedSections, inputs: collections.abc.Sequence[str], outputs: collections.abc.Sequence[str], func_name: str | None = None, params: collections.abc.Sequence[tuple[str, str, typing.Any]] = [], name: str = 'SectionOp', num_inputs: typing.SupportsInt | typing.SupportsIndex | None = None, num_outputs: typing.SupportsInt | typing.SupportsIndex | None = None, check_input: bool = True, language: str = 'c++', c_headers: collections.abc.Sequence[str] = [], c_header_dirs: collections.abc.Sequence[str] = [], c_libraries: collections.abc.Sequence[str] = [], c_lib_dirs: collections.abc.Sequence[str] = [], c_compile_args: collections.abc.Sequence[str] = [], release_gil: bool = True) -> typing.Any:
    """
    Builds the op of loaded section files for the given input/output type strings; ``language="c"`` compiles it as C. The ``c_*`` lists are what the op adds to its module's build, as PyTensor's methods of those names give them; ``release_gil=False`` keeps the GIL while its code runs.
    """
def cache_dir() -> str:
    """
    The module cache directory this process uses.
    """
def derivative_node_op(loaded: LoadedSections, description: OpDescription, options: ExpandOptions, compile_args: collections.abc.Sequence[str], python: typing.Any, overridden: collections.abc.Sequence[str], output_types: collections.abc.Sequence[typing.Any], differentiated: collections.abc.Sequence[bool], cotangents: collections.abc.Sequence[bool], width: typing.SupportsInt | typing.SupportsIndex, mode: str) -> NodeOp:
    """
    The derivative op of a drop-in node (``dropin_node_op``'s arguments first): its C code
    run on dual numbers (forward mode) and on taped numbers (reverse mode). ``mode``
    ``"pullback"``: inputs are the node's, then the cotangent of each output ``cotangents`` marks,
    then the value of each of those outputs (checked against each pass's); outputs the gradient of
    each input ``differentiated`` marks, by forward passes of ``width`` of them or one taped pass,
    as each call picks (``"pullback:forward"``, ``"pullback:reverse"``: a module of that mode
    only). ``"pushforward"`` (``width`` 1): inputs are the node's, then the
    tangent of each differentiated input, then the value of each float output (checked against
    the pass's); outputs the tangent of each float output.
    ``output_types`` are the node's output types. Raises ``LinkError`` at the line of a cast that
    would read dual numbers as plain floats.
    """
def derivative_refusals(loaded: LoadedSections, description: OpDescription, options: ExpandOptions, differentiated: collections.abc.Sequence[bool], dual_outputs: collections.abc.Sequence[bool]) -> dict:
    """
    What the files of a drop-in op refuse of its derivatives for the inputs
    ``differentiated`` marks, the outputs ``dual_outputs`` marks holding dual numbers: casts that
    read an array's data as plain ``double`` (SL306). ``{"all": refusal or None, "every": bool,
    "inputs": {i: refusal}}``, each refusal ``{"message", "diagnostics"}``: ``all``, every cast,
    when any; ``every``, whether one concerns every input (of an output's data, or of an array the
    files do not name), which refuses the derivative whole; ``inputs`` the casts of each input's
    data, which refuse that input's derivative only.
    """
def dropin_node_op(loaded: LoadedSections, description: OpDescription, options: ExpandOptions, compile_args: collections.abc.Sequence[str], python: typing.Any, overridden: collections.abc.Sequence[str]) -> NodeOp:
    """
    A drop-in node's op: the sections of ``loaded`` expanded by the linker core, as
    ``build()``'s are, with ``compile_args`` added. Only the ``overridden`` methods (``c_code``,
    ``c_support_code_apply``, ...) are asked of ``python``, an object with the node's ``c_*``
    methods minus their ``node`` argument.
    """
def expand(sections: LoadedSections, op: OpDescription, node: NodeContext, options: ExpandOptions = ...) -> dict:
    """
    Every c_* method's string for one apply, as a dict keyed by method name
    (``c_code`` is None where the reference raises), plus ``diagnostics``.
    """
def expansion_methods() -> list[ExpansionMethod]:
    """
    The c_* methods of an expansion, in the order the reference documents them.
    """
def link(graph: Graph, constants: collections.abc.Sequence[typing.Any] = [], name: str = 'module', storage: collections.abc.Sequence[typing.Any] | None = None) -> typing.Any:
    """
    Builds (or finds in the cache) and loads the graph's module; returns a CompiledOp.
    ``storage``: one-element lists to use as the input and output cells (a PyTensor VM's
    storage), for an instance run in place with ``run_in_place`` or through ``cthunk()``.
    """
def link_cached(key: str, name: str, n_inputs: typing.SupportsInt | typing.SupportsIndex, n_outputs: typing.SupportsInt | typing.SupportsIndex, constants: collections.abc.Sequence[typing.Any]) -> typing.Any:
    """
    A new instance of the module of cache entry ``key`` (a CompiledOp), or None when the
    cache has no such entry: for a caller that has only the key (a JAX computation exported from
    another process). The entry must be the module of the one op ``name`` with ``n_inputs`` inputs
    and ``n_outputs`` outputs, built for this Python; ``constants`` are its params (a module
    without params ignores them).
    """
def load_sections(paths: collections.abc.Sequence[str], display_paths: collections.abc.Sequence[str] | None = None, extra_tags: collections.abc.Sequence[str] = []) -> LoadedSections:
    """
    Reads and merges section files (`extra_tags`: tags accepted besides the nine). Never raises for file content: see `.error`.
    """
def load_support_library(name: str, code: str, header_dirs: collections.abc.Sequence[str], symbols: collections.abc.Sequence[str], language: str = 'c++') -> tuple:
    """
    Builds (or finds in the cache) and loads a support library from C++ ``code`` (C with ``language="c"``; after Python's and NumPy's headers and the export macros, ``LIBSECTION_EXPORT``; it defines ``libsection_abi_version``, returning ``LIBSECTION_MODULE_ABI``, and ``libsection_module_init``, which gets the runtime's table); returns ``({symbol: address}, info)``.
    """
def load_texts(texts: collections.abc.Sequence[str], names: collections.abc.Sequence[str], extra_tags: collections.abc.Sequence[str] = []) -> LoadedSections:
    """
    Merges section-file texts held in memory (e.g. an unpickled op's func_codes) as load_sections merges files.
    """
def main_function_takes(loaded: LoadedSections, func_name: str) -> list[str] | None:
    """
    What the op's main function `func_name` takes, per parameter as its sections write it: 'array', 'number' or 'other'; None when no section declares it.
    """
def marker_style(text: str) -> str:
    """
    Which marker syntax a text uses: none, section, legacy or mixed.
    """
def native_entry(op: typing.Any) -> tuple:
    """
    (entry address, op address, inputs, outputs, address of the entry taking preset output arrays): how compiled code (Numba, the JAX handler) calls a CompiledOp or a Batched natively; see python/libsection/_numba.py.
    """
def op_cache_version(sections: LoadedSections, op: OpDescription, options: ExpandOptions = ...) -> str:
    """
    The op's cache version: a hash of files, func_name, padding, check_input, params.
    """
def params_spec(fields: collections.abc.Sequence[tuple[str, TypeSpec]]) -> ParamsSpec:
    """
    The ParamsType PyTensor builds from (name, TypeSpec) fields.
    """
def parse_gufunc_signature(signature: str) -> tuple[tuple, tuple]:
    """
    ``"(m,n),(n)->(m)"`` as ``((("m", "n"), ("n",)), (("m",),))``: each input's and
    output's core dimensions, names or fixed lengths (``"3"``). ``ValueError`` for anything
    else.
    """
def parse_params(text: str) -> list[tuple[str, TypeSpec]]:
    """
    Parses params fields ``k:int64,a:float64[:]`` into (name, TypeSpec).
    """
def parse_text(text: str, filename: str = '<string>', extra_tags: collections.abc.Sequence[str] = []) -> LoadedSections:
    """
    Parses section-file text held in memory, as if read from `filename`.
    """
def parse_type(text: str) -> TypeSpec:
    """
    Parses one type (``float64[:]``); raises ValueError naming the bad character.
    """
def parse_types(text: str, role: str = 'input') -> list[TypeSpec]:
    """
    Parses ``float64[:],int64``; raises ValueError naming the item and character.
    """
def prepare(graph: Graph, name: str = 'module') -> None:
    """
    Builds (or finds in the cache) and loads the graph's module without instantiating it, so a later `link` of the same graph only instantiates. Releases the GIL while compiling: threads prepare several graphs at once.
    """
def prepare_together(graphs: collections.abc.Sequence[Graph]) -> None:
    """
    Builds (or finds in the cache) the modules of several graphs, those not in the cache
    compiled together where they can share a library: one compile and one link for all. Each graph
    keeps its own cache entry, so a later `link` of any of them finds it. Raises the first graph's
    compile error once all are done; a graph whose code cannot be generated is left for its `link`
    to report. Releases the GIL while compiling.
    """
def raise_expansion_errors(op_name: str, diagnostics: collections.abc.Sequence[Diagnostic], code_missing: bool) -> None:
    """
    Raises what the drop-in op ``op_name``'s ``c_*`` methods raise for an expansion with
    ``diagnostics``: ``ValueError`` for its errors, unless one is SL604; then, when ``c_code`` is
    asked and the expansion has none (``code_missing``), ``AssertionError`` for SL604, else
    ``NotImplementedError``. Returns when there is nothing to raise.
    """
def recordings_held() -> tuple[int, int]:
    """
    (count, bytes): the recordings (a value's taped pass, kept for its pullback) the runtime holds now (at most 16, and 512 MiB in all; the oldest is freed first).
    """
def recordings_swept(reset: bool = False) -> int:
    """
    How many times a derived gradient of this process swept the tape its function's value recorded (a ``TapedValues`` node) in place of a taped pass of its own; ``reset=True`` starts the count again after reading it.
    """
def relocate_line_directives(module_text: str, module_path: str, resume_file: str = '<libsection-generated>') -> str:
    ...
def single_node_context(op: OpDescription) -> NodeContext:
    """
    The context PyTensor's CLinker gives the only node of a single-node graph of the op.
    """
def tape_bytes(reset: bool = False) -> tuple[int, int]:
    """
    (last, peak): the bytes the tape of this process's last reverse-mode derived gradient took (its entries and adjoints), and the most any took since the last ``reset=True``, which starts that count again after reading it.
    """
__version__: str = '0.1.0'
