"""libsection in PyTensor: the drop-in ``ExternalCOp``, ``pytensor_op`` and ``compile_node``.

Change one import::

    from libsection.pytensor import ExternalCOp   # was: from pytensor.link.c.op import ExternalCOp

The constructor, the attributes (``func_files``, ``func_codes``, ``func_name``,
``code_sections``, ``_cop_num_inputs``, ``_cop_num_outputs``, ``check_input``,
``params_type``, ``SECTIONS``, ``section_re``, ``backward_re``) and every method
(``c_*``, ``get_c_macros``, ``format_c_function_args``, ``load_c_code``, ``get_path``) behave
as PyTensor's, and overriding them works as it does there. Three differences: ``#line``
directives point compiler errors at the ``.c`` files (class attribute ``line_directives``),
``code``/``code_cleanup`` end with a newline so they compile when the node is last in a module
(class attribute ``newline_fix``), and the cache version also covers the function name, the
padding counts, ``check_input`` and the params. There is no ``FutureWarning``. As in
PyTensor, an op reads its files when it is created: a file rewritten since is read again,
whatever its size and modification time (a ``%%section`` cell run twice in one second); ops
reading the same texts share one parse.

**Every backend runs the same C code.** In every mode (``CVM``, ``FAST_COMPILE``, ``NUMBA``,
PyTensor 3's default ``FAST_RUN``, ``JAX``) libsection's linker core builds the node from the
description PyTensor's C linker would use (the op's ``c_*`` methods, its ``params_type`` and
the node's types' own C code): one module per node signature, cached on disk, and one instance
of the op's struct per thunk, as the C backend has. The linker core expands the sections
itself, by the route ``build()``'s ops take and with its checks; Python is asked only for the
``c_*`` methods a class overrides. An op that defines its own Python ``perform`` runs that
outside the C backend, as PyTensor does.

This module is the package's top: it puts the features on the drop-in (derived gradients,
``libsection._gradient``; batches in one C loop, ``libsection._batched_pytensor``) and
registers it with the backends (``libsection._backends``), each when PyTensor loads that
backend.
"""

from __future__ import annotations

from . import _backends, _batched_pytensor, _dropin, _gradient
from ._bridge import pytensor_op, pytensor_type, type_string
from ._dropin import ExternalCOp, own_perform
from ._node import compile_node

__all__ = ["ExternalCOp", "compile_node", "pytensor_op", "pytensor_type", "type_string"]

# The drop-in's gradients: its class's own, else derived from its C code.
_dropin.use_gradients(_gradient)
# Numba costs half a second to import: each backend is registered with only when PyTensor
# loads it (the CVM backend never loads Numba).
_backends.register(ExternalCOp, own_perform)
# Its Blockwise nodes (vectorize_graph, pt.vectorize, PyMC) and its derived gradients' batch in
# one C loop in every mode.
_batched_pytensor.register()

# Their public home, where pickles and the API reference name them.
for _name in ("ExternalCOp", "compile_node", "pytensor_op"):
    globals()[_name].__module__ = __name__
