"""Numba (PyTensor's ``NUMBA`` mode and PyTensor 3's default ``FAST_RUN``) for drop-in ops."""

from __future__ import annotations

import weakref

from ._node import NodeRunner


# Node runners Numba's object-mode blocks call, by number: Numba pickles what such a block
# closes over, and a compiled instance cannot be pickled.
_numba_runners: dict[int, NodeRunner] = {}


def _run_numba_node(number: int, inputs):
    """Module level, so Numba pickles a reference to it rather than the runners."""
    return _numba_runners[number](*inputs)


def register(op_class, own_perform) -> None:
    """Numba runs nodes of ``op_class`` through a runner in object mode, one per compiled
    function; ``own_perform(op)`` tells whether the op's class has its own ``perform``."""
    try:
        import numba
        from pytensor.link.numba.dispatch.basic import get_numba_type, numba_funcify, numba_njit
    except ImportError:  # PyTensor without Numba: nothing to register
        return

    @numba_funcify.register(op_class)
    def _funcify(op, node, **kwargs):
        out_types = [get_numba_type(o.type) for o in node.outputs]
        ret_sig = out_types[0] if len(out_types) == 1 else numba.types.Tuple(out_types)
        number = len(_numba_runners)
        while number in _numba_runners:
            number += 1
        _numba_runners[number] = NodeRunner(node, own_perform(op))

        @numba_njit
        def perform_in_object_mode(*inputs):
            with numba.objmode(ret=ret_sig):
                ret = _run_numba_node(number, inputs)
            return ret

        weakref.finalize(perform_in_object_mode, _numba_runners.pop, number, None)
        return perform_in_object_mode
