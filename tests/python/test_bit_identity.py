"""The drop-in's results are those of PyTensor's C backend to the bit: it compiles with
PyTensor's machine flags, so x * y + z is one fused multiply-add in both (on a CPU with FMA,
23,358 of 10^5 elements differed by 1 ulp without them)."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.link.c.op import ExternalCOp as PyTensorExternalCOp

from libsection._node import pytensor_flags
from libsection.pytensor import ExternalCOp

FMA = "data/backends/fma.c"


def make_node(op, x, y, z):
    return Apply(op, [x, y, z], [pt.dvector()])


class Ours(ExternalCOp):
    __props__ = ()

    def __init__(self):
        super().__init__(FMA, "APPLY_SPECIFIC(fma3)")

    make_node = make_node


class Theirs(PyTensorExternalCOp):
    """The same op on PyTensor's own ExternalCOp, compiled by PyTensor's C backend."""

    __props__ = ()

    def __init__(self):
        super().__init__(FMA, "APPLY_SPECIFIC(fma3)")

    make_node = make_node

    def perform(self, node, inputs, outputs):  # abstract in PyTensor; CVM runs the C code
        raise NotImplementedError


def test_the_drop_in_matches_pytensors_c_backend_bit_for_bit(cache_dir):
    rng = np.random.default_rng(0)
    x, y, z = (rng.normal(size=10**5) for _ in range(3))
    a, b, c = pt.dvector("a"), pt.dvector("b"), pt.dvector("c")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # PyTensor 3.2+ deprecates its own
        theirs = pytensor.function([a, b, c], Theirs()(a, b, c), mode="CVM")(x, y, z)
    ours = pytensor.function([a, b, c], Ours()(a, b, c), mode="CVM")(x, y, z)
    differ = int(np.count_nonzero(ours.view(np.uint64) != theirs.view(np.uint64)))
    assert differ == 0, f"{differ} of {len(x)} elements differ from PyTensor's C backend"


def test_the_machine_flags_follow_pytensors_config(monkeypatch):
    from pytensor import config

    monkeypatch.setattr(config, "gcc__cxxflags", "-march=x86-64 -DX=1")
    assert pytensor_flags() == ["-ffp-contract=fast", "-march=x86-64", "-DX=1"]
    monkeypatch.setattr(config, "gcc__cxxflags", "")
    assert pytensor_flags() == ["-march=native", "-ffp-contract=fast"]


# What `import pymc` appends to PyTensor's flags (a workaround for a Windows GCC bug).
PYMC_FLAGS = (
    " -Wno-c++11-narrowing -fno-exceptions -fno-unwind-tables -fno-asynchronous-unwind-tables"
)


def test_the_drop_in_builds_after_pymc_turned_exceptions_off(monkeypatch, cache_dir):
    """libsection's module turns an op's C++ exceptions into Python errors: PyMC's
    `-fno-exceptions` is left out (the rest of its flags stay), read when the config changes."""
    from pytensor import config

    a, b, c = pt.dvector("a"), pt.dvector("b"), pt.dvector("c")
    pytensor.function([a, b, c], Ours()(a, b, c), mode="CVM")  # the flags read before PyMC
    monkeypatch.setattr(config, "gcc__cxxflags", config.gcc__cxxflags + PYMC_FLAGS)
    assert "-fno-exceptions" not in pytensor_flags()
    assert "-fno-unwind-tables" in pytensor_flags()
    f = pytensor.function([a, b, c], Ours()(a, b, c), mode="CVM")
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 2.0), np.ones(2)), [3.0, 3.0])
