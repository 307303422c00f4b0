"""A drop-in for PyTensor's ``ExternalCOp``, built on PyTensor's ``COp``.

Change one import::

    from libsection.pytensor import ExternalCOp   # was: from pytensor.link.c.op import ExternalCOp

The constructor, the attributes (``func_files``, ``func_codes``, ``func_name``,
``code_sections``, ``_cop_num_inputs``, ``_cop_num_outputs``, ``check_input``,
``params_type``) and every ``c_*`` method behave as PyTensor's, with three differences:
``#line`` directives point compiler errors at the ``.c`` files (class attribute
``line_directives``), ``code``/``code_cleanup`` end with a newline so they compile when the
node is last in a module (class attribute ``newline_fix``), and the cache version also
covers the function name, the padding counts, ``check_input`` and the params. There is no
``FutureWarning``, and each file is read and parsed once per process.
"""

import inspect
from pathlib import Path

from pytensor.graph.type import HasDataType
from pytensor.link.c.op import COp
from pytensor.link.c.params_type import ParamsType

from . import _core, _pytensor_bridge
from ._pytensor_bridge import pytensor_op
# Raises an OSError, or a SectionError (a ValueError) with the reference's message.
from . import _raise_for as _raise_load_error

__all__ = ["ExternalCOp", "pytensor_op"]

# Parsed files, shared by every op instance of the process. The key holds each file's
# modification time and size, so an edited file is parsed again (and a new process always
# reads the files afresh).
_loaded_cache: dict[tuple, "_core.LoadedSections"] = {}


def _file_key(path: Path) -> tuple:
    stat = path.stat()  # raises FileNotFoundError naming the path, as the reference does
    return (str(path), stat.st_mtime_ns, stat.st_size)


def _load(resolved: list[Path], display: list[str]) -> "_core.LoadedSections":
    key = (tuple(_file_key(p) for p in resolved), tuple(display))
    loaded = _loaded_cache.get(key)
    if loaded is None:
        loaded = _core.load_sections([str(p) for p in resolved], display)
        _loaded_cache[key] = loaded
    _raise_load_error(loaded)
    return loaded


class ExternalCOp(COp):
    """An op whose C implementation lives in ``#section`` files.

    ``func_files`` is a path or a list of paths, relative paths being relative to the file
    that defines the op's class. With ``func_name``, ``c_code`` calls that function with the
    inputs, the addresses of the outputs and the params; otherwise a ``code`` section is the
    body of ``c_code``.
    """

    _cop_num_inputs: int | None = None
    _cop_num_outputs: int | None = None
    line_directives = True
    """Emit ``#line`` directives so compilers and debuggers point at the ``.c`` files."""
    newline_fix = True
    """End ``code``/``code_cleanup`` with a newline (PyTensor's do not, and fail to compile
    when the node is the last block of the module)."""

    @classmethod
    def get_path(cls, f: Path) -> Path:
        """Resolves a relative path against the directory of the file defining ``cls``."""
        if not f.is_absolute():
            f = (Path(inspect.getfile(cls)).parent / f).resolve()
        return f

    def __init__(self, func_files, func_name: str | None = None):
        if not isinstance(func_files, list):
            self.func_files = [Path(func_files)]
        else:
            self.func_files = [Path(f) for f in func_files]
        self.func_name = func_name
        self._resolved_files = [self.get_path(f) for f in self.func_files]
        self._loaded = _load(self._resolved_files, [str(f) for f in self.func_files])
        self.func_codes: list[str] = self._loaded.codes
        self.code_sections: dict[str, str] = self._loaded.sections

    def __getstate__(self):
        # The parsed sections are a C++ object: pickle the texts (`func_codes`) instead, and
        # leave the memoised expansions behind.
        return {k: v for k, v in self.__dict__.items() if k not in ("_loaded", "_expansions")}

    @property
    def _sections(self):
        """The parsed sections; after unpickling, parsed again from the pickled texts (like
        the reference, which never reads the files again)."""
        loaded = self.__dict__.get("_loaded")
        if loaded is None:
            loaded = _core.load_texts(self.func_codes, [str(f) for f in self.func_files])
            _raise_load_error(loaded)
            self._loaded = loaded
        return loaded

    def perform(self, node, inputs, output_storage):
        """Runs the op's own C code through libsection's linker core (built once per input and
        output types, cached on disk), so the Python linker and Numba compute what the C
        backend does."""
        _pytensor_bridge.perform(self, node, inputs, output_storage)

    # ---------------------------------------------------------------- expansion

    def _options(self):
        options = _core.ExpandOptions()
        options.line_directives = bool(self.line_directives)
        options.newline_fix = bool(self.newline_fix)
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

    def _op_signature(self):
        """The signature fields that come from the op rather than from a node."""
        signature = _core.ApplySignature()
        signature.params = self._params_spec()
        signature.check_input = bool(getattr(self, "check_input", True))
        signature.func_name = self.func_name
        signature.num_inputs = self._cop_num_inputs
        signature.num_outputs = self._cop_num_outputs
        return signature

    def _expansion(self, node=None, name="", inputs=(), outputs=(), sub=None, fail="",
                   init_fail=""):
        """Every c_* string for one apply. CLinker asks for them one method at a time, so the
        result is kept for the calls that follow with the same arguments."""
        key = (
            name,
            tuple(_dtype(v) for v in node.inputs) if node is not None else (),
            tuple(_dtype(v) for v in node.outputs) if node is not None else (),
            tuple(inputs),
            tuple(outputs),
            sub.get("params", "") if sub is not None else "",
            fail,
            init_fail,
            self.params_type,
            bool(getattr(self, "check_input", True)),
            self.func_name,
            self._cop_num_inputs,
            self._cop_num_outputs,
            bool(self.line_directives),
            bool(self.newline_fix),
        )
        memo = self.__dict__.setdefault("_expansions", {})
        expansion = memo.get(key)
        if expansion is None:
            signature = self._op_signature()
            (signature.node_name, signature.input_dtypes, signature.output_dtypes,
             signature.input_names, signature.output_names, signature.params_name,
             signature.fail, signature.init_fail) = (
                key[0], list(key[1]), list(key[2]), list(key[3]), list(key[4]), key[5],
                key[6], key[7])
            expansion = _core.expand(self._sections, signature, self._options())
            errors = [d for d in expansion["diagnostics"] if d.severity == "error"]
            if errors and not any(d.code == "SE103" for d in errors):
                raise ValueError("\n".join(d.message for d in errors))
            if len(memo) >= 64:  # one op serves many applies over a long session
                memo.clear()
            memo[key] = expansion
        return expansion

    def c_code_cache_version(self):
        signature = self._op_signature()
        if self.params_type is not None:
            signature.params_name = "params"  # the call passes a params argument
        version = (_core.op_cache_version(self._sections, signature, self._options()),)
        if self.params_type is not None:
            version += (self.params_type.c_code_cache_version(),)
        return version

    def c_init_code(self, **kwargs):
        return list(self._expansion()["c_init_code"])

    def c_support_code(self, **kwargs):
        return self._expansion()["c_support_code"]

    def c_init_code_apply(self, node, name):
        return self._expansion(node, name)["c_init_code_apply"]

    def c_support_code_apply(self, node, name):
        return self._expansion(node, name)["c_support_code_apply"]

    def c_support_code_struct(self, node, name):
        return self._expansion(node, name)["c_support_code_struct"]

    def c_cleanup_code_struct(self, node, name):
        return self._expansion(node, name)["c_cleanup_code_struct"]

    def c_init_code_struct(self, node, name, sub):
        return self._expansion(node, name, sub=sub, init_fail=sub["fail"])["c_init_code_struct"]

    def c_code(self, node, name, inp, out, sub):
        expansion = self._expansion(node, name, inp, out, sub, fail=sub["fail"])
        if expansion["c_code"] is None:
            for d in expansion["diagnostics"]:
                if d.code == "SE103":
                    raise AssertionError(d.message)
            raise NotImplementedError(
                f"{type(self).__name__} has no `code` section and no func_name"
            )
        return expansion["c_code"]

    def c_code_cleanup(self, node, name, inputs, outputs, sub):
        return self._expansion(node, name, inputs, outputs, sub, fail=sub["fail"])[
            "c_code_cleanup"
        ]


def _dtype(variable) -> str | None:
    """The dtype the dtype macros describe; None for types without one (generic, params)."""
    return variable.type.dtype if isinstance(variable.type, HasDataType) else None


_pytensor_bridge.register_numba(ExternalCOp)
