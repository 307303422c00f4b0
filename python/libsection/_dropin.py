"""The drop-in: PyTensor's ``ExternalCOp`` built on PyTensor's ``COp`` (public as
``libsection.pytensor.ExternalCOp``), and its node op, the one the linker core builds a node of
it from, which its derivatives build on too.

What it keeps of PyTensor's and what it changes: ``libsection.pytensor``'s docstring. Below it
in the package's layers: the node machinery (``_node``), which builds its nodes in every mode;
above it: the bridge, the features (derived gradients, batched nodes) and the face.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pytensor.link.c.op import COp
from pytensor.link.c.params_type import ParamsType

from . import _core
from ._build import checked_language
from ._load import load_texts, raise_for, relative_to_class
from ._memo import Lru
from ._node import BuiltByTheCore, pytensor_flags
from ._protocol import NODE_METHODS, RESHAPING_METHODS, dtype_of, perform_only_raises
from ._traceback import entry_point

__all__ = [
    "ExternalCOp",
    "derivative_node_op",
    "derivative_refusals",
    "node_op",
    "overridden",
    "overrides",
    "own_perform",
    "use_gradients",
]

_NINE_SECTIONS = frozenset(method.tag for method in _core.expansion_methods())


@dataclass(frozen=True)
class _ApplyKey:
    """Everything one expansion depends on, as PyTensor's C linker asks for it: the memo key of
    ``ExternalCOp._expansion`` and the node context it is built from."""

    name: str
    input_dtypes: tuple[str | None, ...]
    output_dtypes: tuple[str | None, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    params: str  # the params variable's C name; empty without params
    fail: str
    init_fail: str
    params_type: object
    check_input: bool
    func_name: str | None
    num_inputs: int | None
    num_outputs: int | None
    line_directives: bool
    newline_fix: bool
    function_args: str | None  # an overridden format_c_function_args's result
    macros: tuple[str, str] | None  # an overridden get_c_macros's result
    call_macros: tuple[str, str] | None  # the same with check_input=False (the func_name call)
    language: str  # "c" refuses C++ in the files (SL208, SL209)

    def node_context(self) -> _core.NodeContext:
        context = _core.NodeContext()
        context.node_name = self.name
        context.input_dtypes = list(self.input_dtypes)
        context.output_dtypes = list(self.output_dtypes)
        context.inputs = list(self.inputs)
        context.outputs = list(self.outputs)
        params = {"params": self.params} if self.params else {}
        context.sub = {"fail": self.fail, **params}
        context.init_sub = {"fail": self.init_fail, **params}
        context.function_args = self.function_args
        context.macros = self.macros
        context.call_macros = self.call_macros
        return context


# Parsed files, shared by the op instances of the process that read the same texts. Found by
# what the files hold, never by name, time or size: a file rewritten within the clock's
# resolution keeps its time, and often its size (a `%%section` cell run again). Bounded: a
# long session of edits.
_loaded_cache: Lru[tuple, _core.LoadedSections] = Lru(256)


def _load(resolved: list[Path], display: list[str], extra_tags: list[str]) -> _core.LoadedSections:
    """The files as they are now (read afresh each time; the module built from them is found
    by its text too)."""
    loaded = _core.load_sections([str(p) for p in resolved], display, extra_tags)
    raise_for(loaded, [str(p) for p in resolved])
    key = (tuple(map(str, resolved)), tuple(loaded.codes), tuple(display), tuple(extra_tags))
    return _loaded_cache.setdefault(key, loaded)


def overridden(cls: type, name: str) -> bool:
    """Whether ``cls`` overrides libsection's own ``ExternalCOp.<name>``."""
    return getattr(cls, name) is not getattr(ExternalCOp, name)


def overrides(op: Any, names: tuple[str, ...] | list[str]) -> list[str]:
    """The methods among ``names`` that ``op``'s class (or the op itself) defines in place of
    the drop-in's own."""
    return [m for m in names if overridden(type(op), m) or m in op.__dict__]


class Gradients(Protocol):
    """The derived gradients (``libsection._gradient``), which the drop-in's gradient methods
    hand over to; given by ``libsection.pytensor`` (``use_gradients``), the layer above."""

    def pullback(self, op: Any, inputs: Any, outputs: Any, cotangents: Any) -> list: ...
    def pushforward(self, op: Any, inputs: Any, outputs: Any, tangents: Any) -> list: ...
    def r_op(self, op: Any, inputs: Any, eval_points: Any) -> list: ...


_gradients: list[Gradients] = []


def use_gradients(gradients: Any) -> None:
    """Makes the drop-in's ``pullback``, ``pushforward`` and ``R_op`` those of ``gradients``
    (``Gradients``: the op's own when its class has them, else derived from its C code)."""
    _gradients[:] = [gradients]


def _derivatives() -> Gradients:
    if not _gradients:
        raise NotImplementedError(
            "libsection: the drop-in's gradients come with libsection.pytensor: import it"
        )
    return _gradients[0]


class ExternalCOp(BuiltByTheCore, COp):
    r"""An op whose C implementation lives in ``#section`` files: PyTensor's ``ExternalCOp``,
    with the same constructor, attributes and methods.

    Args:
        func_files: A path or a list of paths, relative paths being relative to the file that
            defines the op's class.
        func_name: The function ``c_code`` calls with the inputs, the addresses of the outputs
            and the params; without it, a ``code`` section is the body of ``c_code``.

    Raises:
        SectionError: A section file the reference loader would refuse.
        FileNotFoundError: A section file that does not exist (the message says where it was
            looked for).
        ValueError: A ``language`` other than ``"c++"`` and ``"c"``.

    Examples:
        >>> import pytensor, pytensor.scalar as ps
        >>> from pathlib import Path
        >>> from pytensor.graph.basic import Apply
        >>> from libsection.pytensor import ExternalCOp
        >>> _ = Path("twice.c").write_text("#section code\nOUTPUT_0 = 2 * INPUT_0;\n")
        >>> class Twice(ExternalCOp):
        ...     def make_node(self, x):
        ...         return Apply(self, [x], [x.type()])
        >>> x = ps.float64("x")
        >>> f = pytensor.function([x], Twice("twice.c")(x))
        >>> print(f(1.5))
        3.0
    """

    SECTIONS: set[str] = set(_NINE_SECTIONS)
    """The section tags files may use; a base class may add its own (Theano's
    ``CGpuKernelBase`` adds ``kernels``), which then load into ``code_sections``."""
    section_re = re.compile(r"^#section ([a-zA-Z0-9_]+)$", re.MULTILINE)
    """The marker PyTensor matches (libsection's parser matches it too, and reports near
    misses)."""
    backward_re = re.compile(r"^PYTENSOR_(APPLY|SUPPORT)_CODE_SECTION$", re.MULTILINE)
    """PyTensor's legacy marker (libsection also reads the ``THEANO_`` and ``AESARA_`` ones)."""
    _cop_num_inputs: int | None = None
    _cop_num_outputs: int | None = None
    line_directives = True
    """Emit ``#line`` directives so compilers and debuggers point at the ``.c`` files."""
    newline_fix = True
    """End ``code``/``code_cleanup`` with a newline (PyTensor's do not, and fail to compile
    when the node is the last block of the module)."""
    language = "c++"
    """What the section files are written in: ``"c++"`` (PyTensor's, the default) or ``"c"``,
    checked as C (section-lint's SL208 and SL209) and compiled as C."""
    release_gil = True
    """Run the C code without the GIL where the linker sees that is safe, taking it back around
    each call of Python's or NumPy's API (README, "Threads"); ``False`` keeps it held."""
    vmap_method = "sequential"
    """How a batch (``Blockwise``, ``vectorize_graph``, ``jax.vmap``) runs the C code: once per
    row, in one C loop (``"sequential"``), or once for the whole batch, every input broadcast to
    the batch shape (``"broadcast_all"``: the C code takes leading batch dimensions)."""

    @classmethod
    def get_path(cls, f: Path) -> Path:
        """Resolves a relative path against the directory of the file defining ``cls`` (the
        working directory for a class defined in a notebook cell or at a prompt)."""
        return relative_to_class(cls, Path(f))

    @entry_point
    def __init__(
        self, func_files: str | Path | list[str | Path], func_name: str | None = None
    ) -> None:
        if not isinstance(func_files, list):
            self.func_files = [Path(func_files)]
        else:
            self.func_files = [Path(f) for f in func_files]
        self.func_name = func_name
        self.func_codes: list[str] = []
        self.code_sections: dict[str, str] = {}
        self._code_names: list[str] = []
        self._resolved_files: list[Path] = []
        checked_language(type(self).__name__, self.language)  # a bad value fails here
        self.load_c_code(self.func_files)

    def _extra_tags(self) -> list[str]:
        return sorted(set(self.SECTIONS) - _NINE_SECTIONS)

    def load_c_code(self, func_files) -> None:
        """Loads section files and merges them into ``func_codes`` and ``code_sections``, as
        PyTensor's method does (a second call appends)."""
        files = [Path(f) for f in func_files]
        resolved = [self.get_path(f) for f in files]
        loaded = _load(resolved, [str(f) for f in files], self._extra_tags())
        if self.func_codes:  # appended to what an earlier call loaded: merge all texts again
            loaded = load_texts(
                self.func_codes + loaded.codes,
                self._code_names + [str(f) for f in files],
                self._extra_tags(),
            )
        self._loaded = loaded
        self._resolved_files += resolved
        self._code_names += [str(f) for f in files]
        self.func_codes = loaded.codes
        self.code_sections = loaded.sections

    def __getstate__(self):
        # The parsed sections are a C++ object: pickle the texts (`func_codes`) instead, and
        # leave the memoised expansions behind.
        return {k: v for k, v in self.__dict__.items() if k not in ("_loaded", "_expansions")}

    @property
    def _sections(self) -> _core.LoadedSections:
        """The parsed sections; after unpickling, parsed again from the pickled texts (like
        the reference, which never reads the files again)."""
        loaded = self.__dict__.get("_loaded")
        if loaded is None:
            names = self.__dict__.get("_code_names") or [str(f) for f in self.func_files]
            loaded = self._loaded = load_texts(self.func_codes, names, self._extra_tags())
        return loaded

    # ---------------------------------------------------------------- running outside CVM

    def runs_own_perform(self) -> bool:
        return own_perform(self)

    # ---------------------------------------------------------------- derivatives

    def pullback(self, inputs, outputs, cotangents):
        """The op's gradient: the one its class defines (``pullback``, ``L_op`` or ``grad``),
        else one derived from its C code (``libsection._gradient``)."""
        return _derivatives().pullback(self, inputs, outputs, cotangents)

    L_op = pullback  # what PyTensor before 3.3 asks for

    def pushforward(self, inputs, outputs, tangents):
        """The op's Jacobian-vector product: its class's own (``pushforward`` or ``R_op``),
        else one derived from its C code."""
        return _derivatives().pushforward(self, inputs, outputs, tangents)

    def R_op(self, inputs, eval_points):
        return _derivatives().r_op(self, inputs, eval_points)

    # ---------------------------------------------------------------- expansion

    def _options(self):
        options = _core.ExpandOptions()
        options.line_directives = bool(self.line_directives)
        options.newline_fix = bool(self.newline_fix)
        if "_resolved_files" in self.__dict__:
            options.line_paths = [str(p) for p in self._resolved_files]
        return options

    def _params_spec(self):
        if not isinstance(self.params_type, ParamsType):
            return None
        wrapper = self.params_type
        fields = [
            _core.ParamField(name, type_.c_element_type())
            for name, type_ in zip(wrapper.fields, wrapper.types, strict=True)
        ]
        return _core.ParamsSpec(wrapper.name, fields)

    def _op_description(self, check_input: bool | None = None):
        """What the op is, whatever node it is applied to."""
        op = _core.OpDescription()
        op.name = type(self).__name__  # named by a bad `language`
        op.language = str(self.language)
        op.release_gil = bool(getattr(self, "release_gil", True))
        op.has_params = self.params_type is not None
        op.params = self._params_spec()
        if check_input is None:
            check_input = getattr(self, "check_input", True)
        op.check_input = bool(check_input)
        op.func_name = self.func_name
        op.num_inputs = self._cop_num_inputs
        op.num_outputs = self._cop_num_outputs
        return op

    def _expansion(
        self,
        node=None,
        name="",
        inputs=(),
        outputs=(),
        sub=None,
        fail="",
        init_fail="",
        check_input=None,
        macros=None,
        call_macros=None,
    ):
        """Every c_* string for one apply (with ``macros``/``call_macros``, an overridden
        ``get_c_macros``'s, in place of the generated ones). CLinker asks for them one method at
        a time, so the result is kept for the calls that follow with the same arguments."""
        function_args = None
        own_args = overridden(type(self), "format_c_function_args")
        if self.func_name is not None and outputs and own_args:
            function_args = self.format_c_function_args(list(inputs), list(outputs))
        if check_input is None:
            check_input = bool(getattr(self, "check_input", True))
        key = _ApplyKey(
            name=name,
            input_dtypes=tuple(dtype_of(v) for v in node.inputs) if node is not None else (),
            output_dtypes=tuple(dtype_of(v) for v in node.outputs) if node is not None else (),
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            params=sub.get("params", "") if sub is not None else "",
            fail=fail,
            init_fail=init_fail,
            params_type=self.params_type,
            check_input=check_input,
            func_name=self.func_name,
            num_inputs=self._cop_num_inputs,
            num_outputs=self._cop_num_outputs,
            line_directives=bool(self.line_directives),
            newline_fix=bool(self.newline_fix),
            function_args=function_args,
            macros=macros,
            call_macros=call_macros,
            language=str(self.language),
        )
        memo = self.__dict__.get("_expansions")
        if memo is None:  # one op serves many applies over a long session
            memo = self.__dict__["_expansions"] = Lru(64)
        expansion = memo.get(key)
        if expansion is None:
            expansion = _core.expand(
                self._sections,
                self._op_description(check_input),
                key.node_context(),
                self._options(),
            )
            _core.raise_expansion_errors(
                type(self).__name__, expansion["diagnostics"], code_missing=False
            )
            memo[key] = expansion
        return expansion

    def _node_op(self, python):
        """This op as the linker core builds it for one node (``node_op``)."""
        return node_op(self, python)

    def _methods(self, node, name, inputs=(), outputs=(), sub=None, fail="", init_fail=""):
        """The c_* strings of one apply, with the macros of an overridden ``get_c_macros``
        where the generated ones would be (the ``func_name`` call is wrapped in its
        ``check_input=False`` macros)."""
        macros = call_macros = None
        if overridden(type(self), "get_c_macros"):
            macros = tuple(self.get_c_macros(node, name))
            if self.func_name is not None:
                call_macros = tuple(self.get_c_macros(node, name, check_input=False))
        return self._expansion(
            node,
            name,
            inputs,
            outputs,
            sub,
            fail,
            init_fail,
            macros=macros,
            call_macros=call_macros,
        )

    def get_c_macros(self, node, name, check_input=None):
        """``(defines, undefs)``: the ``DTYPE_``/``TYPENUM_``/``ITEMSIZE_`` macros of each input
        and output (when ``check_input``, by default the op's), ``APPLY_SPECIFIC`` and the
        params macros, each joined with newlines, as PyTensor's method returns them."""
        return self._expansion(node, name, check_input=check_input)["macros"]

    def format_c_function_args(self, inp, out):
        """The argument list of the ``func_name`` call: the inputs, then the addresses of the
        outputs, each list padded with ``NULL`` to ``_cop_num_inputs``/``_cop_num_outputs``.
        A subclass may override it (its result is used verbatim)."""
        inp = list(inp)
        if self._cop_num_inputs is not None:
            inp += ["NULL"] * (self._cop_num_inputs - len(inp))
        out = [f"&{o}" for o in out]
        if self._cop_num_outputs is not None:
            out += ["NULL"] * (self._cop_num_outputs - len(out))
        return ", ".join(inp + out)

    def c_code_cache_version(self):
        version = (_core.op_cache_version(self._sections, self._op_description(), self._options()),)
        if self.params_type is not None:
            version += (self.params_type.c_code_cache_version(),)
        for method in ("format_c_function_args", "get_c_macros"):  # their code shapes ours
            if overridden(type(self), method):
                version += (_code_fingerprint(getattr(type(self), method)),)
        return version

    def c_init_code(self, **kwargs):
        return list(self._expansion()["c_init_code"])

    def c_support_code(self, **kwargs):
        return self._expansion()["c_support_code"]

    def c_init_code_apply(self, node, name):
        return self._methods(node, name)["c_init_code_apply"]

    def c_support_code_apply(self, node, name):
        return self._methods(node, name)["c_support_code_apply"]

    def c_support_code_struct(self, node, name):
        return self._methods(node, name)["c_support_code_struct"]

    def c_cleanup_code_struct(self, node, name):
        return self._methods(node, name)["c_cleanup_code_struct"]

    def c_init_code_struct(self, node, name, sub):
        return self._methods(node, name, sub=sub, init_fail=sub["fail"])["c_init_code_struct"]

    def c_code(self, node, name, inp, out, sub):
        expansion = self._methods(node, name, inp, out, sub, fail=sub["fail"])
        if expansion["c_code"] is None:
            _core.raise_expansion_errors(
                type(self).__name__, expansion["diagnostics"], code_missing=True
            )
        return expansion["c_code"]

    def c_code_cleanup(self, node, name, inputs, outputs, sub):
        return self._methods(node, name, inputs, outputs, sub, fail=sub["fail"])["c_code_cleanup"]


def own_perform(op: Any) -> bool:
    """Whether the op's class has its own ``perform`` (which then runs, as PyTensor runs it); a
    ``perform`` that only raises is the stub of a C-only op, not one."""
    return overridden(type(op), "perform") and not perform_only_raises(type(op).perform)


# ---- the node op ------------------------------------------------------------------------------


def _section_op_parts(
    op: ExternalCOp,
) -> tuple[_core.LoadedSections, _core.OpDescription, _core.ExpandOptions, list[str]]:
    """What the linker core makes a drop-in op's ``SectionOp`` of: its parsed sections, its
    description, its expansion options and PyTensor's compile flags."""
    description = op._op_description()
    description.name = type(op).__name__
    return op._sections, description, op._options(), pytensor_flags()


def node_op(op: ExternalCOp, python: Any) -> Any:
    """The op as the linker core builds it for one node: its sections expanded in C++, as
    ``build()``'s are, with the same checks; ``python`` (the node's methods minus ``node``,
    ``_node.COpAdapter``) is asked only for the ``c_*`` methods the class overrides, and for
    ``get_c_macros`` and ``format_c_function_args`` when the class overrides them (their
    results go where the generated macros and argument list would, as in ``_methods``)."""
    asked = overrides(op, NODE_METHODS) + [m for m in RESHAPING_METHODS if overridden(type(op), m)]
    return _core.dropin_node_op(*_section_op_parts(op), python, asked)


def derivative_node_op(op: ExternalCOp, python: Any, output_types, *spec: Any) -> Any:
    """The linker core's op computing ``op``'s derivatives for one node: the node op's code on
    dual numbers, in a driver (``spec``: ``differentiated, cotangents, width, mode``, as
    ``_core.derivative_node_op`` takes them). Raises ``LinkError`` where the files hide values
    from the derivatives (``derivative_refusals`` tells which, as data)."""
    asked = overrides(op, NODE_METHODS)
    return _core.derivative_node_op(
        *_section_op_parts(op), python, asked, list(output_types), *spec
    )


def derivative_refusals(op: ExternalCOp, differentiated: list[bool], dual_outputs: list[bool]):
    """Where ``op``'s files hide values from the derivatives of the inputs ``differentiated``
    marks (casts to a plain ``double``, SL306), as the linker core finds them:
    ``{"all": refusal or None, "every": bool, "inputs": {i: refusal}}``, each refusal
    ``{"message", "diagnostics"}`` (``_core.derivative_refusals``)."""
    return _core.derivative_refusals(
        *_section_op_parts(op)[:3], list(differentiated), list(dual_outputs)
    )


def _code_fingerprint(function) -> str:
    import hashlib

    try:
        text = inspect.getsource(function)
    except (OSError, TypeError):
        code = function.__code__
        text = repr((code.co_code, code.co_consts, code.co_names))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
