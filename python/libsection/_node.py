"""One PyTensor node built through libsection's linker core, in every mode: the C VM's thunk
(``make_c_thunk``, which the VM calls natively), the Python linker's (``make_thunk``), the
instance Numba and JAX call (``compile_node``, or ``NodeRunner`` for an op's own ``perform``),
and the modules of a function's nodes built together (``prepare_nodes``).

The node's description is the one PyTensor's C backend builds from: the op's own ``c_*``
methods (a drop-in op's sections expanded by the linker core, Python asked only for what its
class overrides), its ``params_type`` and the node's types' C code, compiled with PyTensor's
flags (``pytensor_flags``). Each thunk gets its own compiled instance, so the op's struct lives
as long as the thunk, as in the C backend.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import numpy as np
from pytensor.graph.basic import Apply
from pytensor.graph.utils import MethodNotDefined
from pytensor.scalar import ScalarType

from . import _core
from ._core import CompiledOp
from ._memo import Lru, once
from ._protocol import PerNode
from ._traceback import entry_point

__all__ = [
    "BuiltByTheCore",
    "COpAdapter",
    "NodeRunner",
    "compile_node",
    "make_c_thunk",
    "make_thunk",
    "node_params",
    "prepare_function",
    "prepare_nodes",
    "pytensor_flags",
    "store",
]


@once
def _node_compile_error_class() -> type:
    """libsection's ``CompileError`` that is also PyTensor's (``NodeCompileError``), so code
    that catches either keeps working. PyTensor's class is imported only here, when a node
    first fails: its module imports setuptools (0.2 s)."""
    from pytensor.link.c.exceptions import CompileError as PyTensorCompileError

    return type(
        "NodeCompileError",
        (_core.CompileError, PyTensorCompileError),
        {"__module__": __name__, "__doc__": _node_compile_error_class.__doc__},
    )


def _node_compile_error(error: Any) -> Exception:
    """A node that did not compile (``error``, a ``_core.CompileError``, carries attributes its
    stub does not declare) as ``_node_compile_error_class()``, with ``.diagnostics`` and
    ``.kept_dir``."""
    out: Any = _node_compile_error_class()(str(error))
    out.diagnostics, out.kept_dir = error.diagnostics, error.kept_dir
    return out


class COpAdapter:
    """A PyTensor op's ``c_*(node, ...)`` methods for one node, in the linker core's op
    interface (the same methods without ``node``), so the linker core builds the node from the
    description PyTensor's C backend would use. Ops that are not drop-ins (PyTensor's own, any
    ``COp`` given to ``compile_node``) are built from it whole; a drop-in op (``_node_op``) and
    a derivative of one ask it only for the methods their class overrides in Python, the rest
    being the linker core's own expansion of the sections."""

    def __init__(self, op, node):
        self.op, self.node = op, node
        self.name = type(op).__name__

    def _call(self, method: str, *args, default: Any = ""):
        try:
            return getattr(self.op, method)(*args)
        except MethodNotDefined:
            return default

    def c_code(self, name, inputs, outputs, sub):
        return self.op.c_code(self.node, name, inputs, outputs, sub)

    def c_code_cleanup(self, name, inputs, outputs, sub):
        return self._call("c_code_cleanup", self.node, name, inputs, outputs, sub)

    def c_support_code_apply(self, name):
        return self._call("c_support_code_apply", self.node, name)

    def c_init_code_apply(self, name):
        return self._call("c_init_code_apply", self.node, name)

    def c_support_code_struct(self, name):
        return self._call("c_support_code_struct", self.node, name)

    def c_init_code_struct(self, name, sub):
        return self._call("c_init_code_struct", self.node, name, sub)

    def c_cleanup_code_struct(self, name):
        return self._call("c_cleanup_code_struct", self.node, name)

    def c_support_code(self):
        return self._call("c_support_code")

    def c_init_code(self):
        return self._call("c_init_code", default=[])

    def c_headers(self):
        return self._call("c_headers", default=[])

    def c_header_dirs(self):
        return [d for d in self._call("c_header_dirs", default=[]) if d]

    def c_libraries(self):
        return self._call("c_libraries", default=[])

    def c_lib_dirs(self):
        return [d for d in self._call("c_lib_dirs", default=[]) if d]

    def c_compile_args(self):
        return [*pytensor_flags(), *self._call("c_compile_args", default=[])]

    # A drop-in op's methods that reshape every string (asked by its route only).

    def get_c_macros(self, name, check_input=None):
        if check_input is None:
            return self.op.get_c_macros(self.node, name)
        return self.op.get_c_macros(self.node, name, check_input=check_input)

    def format_c_function_args(self, inputs, outputs):
        return self.op.format_c_function_args(list(inputs), list(outputs))


# Flags of PyTensor's config that libsection's modules cannot take. PyMC adds
# `-fno-exceptions` (and drops unwind tables) on import, for a Windows GCC bug; PyTensor's own
# modules have no `try`, but libsection's turn an op's C++ exceptions into Python errors.
# None of these changes a result.
_DROPPED_FLAGS = frozenset({"-fno-exceptions"})
# The flags of the last config.gcc__cxxflags seen.
_pytensor_flags: Lru[str, list[str]] = Lru(1)


def pytensor_flags() -> list[str]:
    """The flags PyTensor's C backend compiles every module with, so a node's results are those
    of PyTensor's C backend to the bit: its machine flags (the expansion of GCC's
    ``-march=native``, unless ``config.gcc__cxxflags`` names a ``-march``), ``a*b+c``
    contracted to one fused operation as in GCC's GNU mode, which PyTensor's g++ runs in
    (libsection's own ``-std=c++17`` would turn it off), then ``config.gcc__cxxflags`` less
    ``-fno-exceptions``. Read anew when the config changes (importing PyMC changes it). The
    machine flags put the CPU in the module's cache key."""
    from pytensor import config

    return _pytensor_flags.get_or_make(config.gcc__cxxflags, lambda: _flags(config.gcc__cxxflags))


def _flags(setting: str) -> list[str]:
    user = [f for f in shlex.split(setting) if f not in _DROPPED_FLAGS]
    machine = [] if any(f.startswith("-march=") for f in user) else ["-march=native"]
    return [*machine, "-ffp-contract=fast", *user]


def node_params(op, node):
    """The node's params value and type, as PyTensor's C linker finds them; None without."""
    try:
        value = op.get_params(node)
    except MethodNotDefined:
        return None
    params_type = node.params_type if hasattr(node, "params_type") else op.params_type
    if isinstance(params_type, ScalarType):
        # get_params may return a plain number (PyTensor allows it); the scalar's C extract
        # takes exactly its NumPy scalar, which the type's filter makes (or refuses the value).
        value = params_type.filter(value)
    return value, params_type


def _node_op(op, node):
    """The node's op for the linker core: a drop-in op's own (its sections expanded in C++,
    Python asked only for what its class overrides), else the op's ``c_*`` methods."""
    methods = COpAdapter(op, node)
    own_route = getattr(op, "_node_op", None)
    return own_route(methods) if own_route is not None else methods


def _node_graph(node):
    """The linker core's graph of one node, and its constant values (the params)."""
    op = node.op
    graph = _core.Graph()
    inputs = [
        graph.add_input(v.type, str(v.name or f"input {i}")) for i, v in enumerate(node.inputs)
    ]
    constants, params_var = [], None
    params = node_params(op, node)
    if params is not None:
        params_var = graph.add_constant(params[1], "params")
        constants.append(params[0])
    outputs = graph.add_apply(
        _node_op(op, node), inputs, [v.type for v in node.outputs], params_var
    )
    for o in outputs:
        graph.add_output(o)
    return graph, constants


# The graphs prepare_nodes built, each taken by the first compile_node of its node: a graph
# keeps its generated module, so the node's C code is generated once. Bounded, since a
# prepared node's thunk may never be built.
_prepared_graphs: Lru[Any, tuple[Any, list[Any]]] = Lru(256)


def prepare_nodes(nodes, jobs: int | None = None) -> None:
    """Builds (or finds) the modules of several nodes at once, so that building their thunks
    afterwards only loads: those not in the cache are compiled together, in one library per
    compiler process, up to ``jobs`` processes (default: the CPUs). A node that fails here
    fails again, with its message, when its thunk is built."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    nodes = list(nodes)
    if len(nodes) < 2:
        return
    graphs = []
    for node in nodes:
        try:
            graph, constants = _node_graph(node)
        except Exception:  # reported where the thunk is built, in PyTensor's order
            continue
        _prepared_graphs[node] = (graph, constants)
        graphs.append(graph)
    workers = max(1, min(len(graphs), jobs or os.cpu_count() or 1))
    chunks = [graphs[i::workers] for i in range(workers)]
    group = _core.BuildGroup()  # this call's builds, and no other thread's

    def prepare(chunk):
        try:
            with group:
                _core.prepare_together(chunk)
        except Exception:  # reported where the thunk is built, in PyTensor's order
            pass

    try:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(prepare, chunks))
    except KeyboardInterrupt:  # reaches this thread only: stop the workers' compiles too
        group.cancel()
        raise


class BuiltByTheCore:
    """An op class whose nodes libsection's linker core builds in every mode (the drop-in's
    and its derivatives'): the C backend's thunk, the Python linker's and ``perform`` called
    directly all run the node's compiled instance. The first such node of a function to get
    its C thunk builds the modules of all of them (``prepare_function``)."""

    def runs_own_perform(self) -> bool:
        """Whether the Python linker's thunk runs a ``perform`` of the op's class's own."""
        return False

    @entry_point
    def perform(self, node, inputs, output_storage):
        """Runs the op's own C code through libsection's linker core, so the Python linker and
        Numba compute what the C backend does. Called directly, it keeps one compiled
        instance per node (thunks made by the linkers get one each)."""
        store(_performed(node)(*inputs), output_storage)

    @entry_point
    def make_c_thunk(self, node, storage_map, compute_map, no_recycling):
        """The C backend's thunk, built by libsection's linker core (its compile cache,
        precompiled header and no per-process probe) from the same description PyTensor's
        CLinker would use; the VM calls it natively, as it calls CLinker's. The first such
        node of a function builds the modules of all of them at once, compiled together."""
        prepare_function(storage_map)
        return make_c_thunk(node, storage_map, compute_map)

    @entry_point
    def make_py_thunk(self, node, storage_map, compute_map, no_recycling, debug=False):
        """The Python linker's thunk: the node's own runner (its struct lives as long as the
        thunk)."""
        runner = NodeRunner(node, self.runs_own_perform())
        return make_thunk(runner, node, storage_map, compute_map)


# Storage maps (of functions being built) whose nodes were already built together. By id: a
# reused id only costs a missed head start, never a wrong result.
_prepared: Lru[tuple[int, int], bool] = Lru(256)


def prepare_function(storage_map) -> None:
    """PyTensor builds thunks one node after another; the storage map holds every variable
    of the function, so the first node built by the linker core builds the modules of all
    such nodes of the function (``BuiltByTheCore``), those not in the cache compiled together
    (``prepare_nodes``)."""
    key = (id(storage_map), len(storage_map))
    if _prepared.get(key):
        return
    _prepared[key] = True
    nodes = {
        v.owner
        for v in storage_map
        if getattr(v, "owner", None) is not None and isinstance(v.owner.op, BuiltByTheCore)
    }
    prepare_nodes(nodes)


def compile_node(node: Apply, storage: Sequence[list[Any]] | None = None) -> CompiledOp:
    r"""A fresh compiled instance of a node of a drop-in op (the module is built once per
    signature and cached on disk; each instance has its own struct).

    Args:
        node: An apply of a ``libsection.pytensor.ExternalCOp``.
        storage: The one-element lists of the node's inputs, then outputs, as a PyTensor VM
            holds them: the instance then runs in place on them (``run_in_place``).

    Returns:
        The instance: called on the node's input values, it returns the output (a tuple when
        there are several).

    Raises:
        CompileError: The compiler refused the op's code.

    Examples:
        >>> import numpy as np, pytensor.scalar as ps
        >>> from pathlib import Path
        >>> from pytensor.graph.basic import Apply
        >>> from libsection.pytensor import ExternalCOp, compile_node
        >>> _ = Path("twice.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n")
        >>> class Twice(ExternalCOp):
        ...     def make_node(self, x):
        ...         return Apply(self, [x], [x.type()])
        >>> node = Twice("twice.c").make_node(ps.float64("x"))
        >>> print(compile_node(node)(np.float64(1.5)))  # values as PyTensor passes them
        3.0
    """
    prepared = _prepared_graphs.pop(node, None)
    graph, constants = prepared if prepared is not None else _node_graph(node)
    try:
        return _core.link(graph, constants, type(node.op).__name__, storage)
    except _core.CompileError as e:
        raise _node_compile_error(e) from None


# Compiled instances of nodes whose op's perform was called directly (not through a thunk).
_performed: PerNode = PerNode(compile_node)


def make_c_thunk(node, storage_map, compute_map):
    """The thunk of PyTensor's C backend: the node's own instance, run in place on the VM's
    storage, with the ``cthunk`` capsule the VM calls natively (CLinker's convention)."""
    input_storage = [storage_map[v] for v in node.inputs]
    output_storage = [storage_map[v] for v in node.outputs]
    compiled = compile_node(node, input_storage + output_storage)
    computed = [compute_map[v] for v in node.outputs] if compute_map is not None else []

    def thunk():
        compiled.run_in_place()
        for c in computed:
            c[0] = True

    thunk.compiled = compiled
    thunk.cthunk = compiled.cthunk()  # the VM keeps no reference of its own: keep it here
    thunk.inputs = input_storage
    thunk.outputs = output_storage
    thunk.lazy = False
    return thunk


def store(results, output_storage) -> None:
    if len(output_storage) == 1:
        output_storage[0][0] = results
        return
    for storage, value in zip(output_storage, results, strict=True):
        storage[0] = value


class NodeRunner:
    """Runs one node outside PyTensor's C backend, as PyTensor would: through the op's own
    ``perform`` when its class defines one, else through a compiled instance of the node (one
    struct for the runner's lifetime). A ``perform`` that raises ``NotImplementedError`` (PyTensor
    declares ``perform`` abstract, so C-only ops often define one that refuses) hands over to
    the C code."""

    def __init__(self, node, own_perform: bool):
        self.node = node
        self.compiled = None if own_perform else compile_node(node)
        # Numba boxes scalars as Python numbers; PyTensor's scalar C code takes NumPy scalars.
        self.scalars = [
            (i, np.dtype(v.type.dtype).type)
            for i, v in enumerate(node.inputs)
            if isinstance(v.type, ScalarType)
        ]

    def __call__(self, *inputs):
        """The output, or a tuple of outputs when the node has several."""
        if self.scalars:
            inputs = list(inputs)
            for i, scalar in self.scalars:
                inputs[i] = scalar(inputs[i])
        if self.compiled is None:
            storage = [[None] for _ in self.node.outputs]
            try:
                self.node.op.perform(self.node, list(inputs), storage)
            except NotImplementedError:
                self.compiled = compile_node(self.node)
            else:
                return storage[0][0] if len(storage) == 1 else tuple(s[0] for s in storage)
        return self.compiled(*inputs)


def make_thunk(run, node, storage_map, compute_map):
    """A thunk of PyTensor's Python linker calling ``run`` on the node's storage."""
    input_storage = [storage_map[v] for v in node.inputs]
    output_storage = [storage_map[v] for v in node.outputs]
    computed = [compute_map[v] for v in node.outputs] if compute_map is not None else []

    def thunk():
        store(run(*[s[0] for s in input_storage]), output_storage)
        for c in computed:
            c[0] = True

    thunk.inputs = input_storage
    thunk.outputs = output_storage
    thunk.perform = node.op.perform
    thunk.lazy = False
    return thunk
