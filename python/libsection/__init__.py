"""libsection: write PyTensor-family C ops as ``#section`` files.

The C++ core parses section files, expands them for one application of an op, builds, caches
and loads the compiled module. This package exposes it to Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _backends
from ._build import CompiledOp, CompileError, LinkError, Module, build, build_many
from ._core import Diagnostic, LoadedSections, __version__
from ._load import LoadError, SectionDecodeError, SectionError, load, load_sections, parse_text
from ._types import ndim, tensor, type_of, upcast
from .op import ExternalCOp

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

# What libsection's backend modules do when a framework is imported, whatever imported it (a
# JAX computation exported from another process calls libsection's XLA target by name).
_backends.watch_frameworks()


def load_ipython_extension(ipython: InteractiveShell) -> None:
    r"""``%load_ext libsection`` in IPython or Jupyter: the ``%%section NAME.c`` cell magic.

    The magic writes the cell to ``NAME.c`` in the working directory and lints it; with
    ``--outputs`` it also builds the op and defines it in the notebook as ``NAME`` (or
    ``--name``), a ``CompiledOp``; ``%%section -h`` lists its options.

    Args:
        ipython: The shell, which IPython passes.

    Examples:
        >>> import libsection
        >>> from IPython.core.interactiveshell import InteractiveShell
        >>> shell = InteractiveShell.instance()
        >>> libsection.load_ipython_extension(shell)  # what `%load_ext libsection` does
        >>> cell = "#section code\nOUTPUT_0 = 2 * INPUT_0;\n"
        >>> shell.run_cell_magic("section", "twice.c --inputs float64 --outputs float64", cell)
        All checks passed!
        >>> print(shell.user_ns["twice"](1.5))
        3.0
    """
    from ._magic import load_ipython_extension as load

    load(ipython)


__all__ = [
    "CompileError",
    "CompiledOp",
    "Diagnostic",
    "ExternalCOp",
    "LinkError",
    "LoadError",
    "LoadedSections",
    "Module",
    "SectionDecodeError",
    "SectionError",
    "__version__",
    "build",
    "build_many",
    "load",
    "load_ipython_extension",
    "load_sections",
    "ndim",
    "parse_text",
    "tensor",
    "type_of",
    "upcast",
]
