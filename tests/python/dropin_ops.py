"""Ops written for the drop-in's differential tests, each defined twice from one recipe: on
libsection's drop-in base and on PyTensor's own ExternalCOp, so that the tests can run both on
the same C files in the same modes.

The C files are in data/dropin/ (paths resolve against this file, as PyTensor's do).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.link.c.params_type import ParamsType
from pytensor.link.c.type import EnumList, generic
from pytensor.scalar import ScalarType
from pytensor.tensor import as_tensor_variable
from pytensor.tensor.type import TensorType

from libsection.pytensor import ExternalCOp

DATA = Path(__file__).resolve().parent / "data" / "dropin"


def pytensor_base():
    """PyTensor's own ExternalCOp (deprecated since 3.2: its FutureWarning is silenced)."""
    from pytensor.link.c.op import ExternalCOp

    return ExternalCOp


class _Op:
    """What every test op shares: PyTensor's FutureWarning (3.2+) is silenced."""

    def _load(self, *args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            super().__init__(*args)


class CounterRecipe(_Op):
    """Counts its own calls in struct state (PyTensor's test_op_struct idea)."""

    __props__ = ()

    def __init__(self):
        self._load("data/dropin/counter.c", "APPLY_SPECIFIC(count)")

    def make_node(self, x):
        return Apply(self, [as_tensor_variable(x)], [pt.lscalar()])


class HelperRecipe(_Op):
    """Its section file calls code the op gives from Python: support code, a header found
    through c_header_dirs, a macro from c_compile_args, module init code."""

    __props__ = ()

    def __init__(self):
        self._load("data/dropin/helper_user.c", "APPLY_SPECIFIC(scaled)")

    def make_node(self, x):
        return Apply(self, [as_tensor_variable(x)], [pt.dvector()])

    def c_support_code(self, **kwargs):
        own = (
            "static int helper_ready = 0;\nstatic double helper_scale(double v) { return v * 3; }\n"
        )
        return own + super().c_support_code(**kwargs)

    def c_init_code(self, **kwargs):
        return ["helper_ready = 1;", *super().c_init_code(**kwargs)]

    def c_headers(self, **kwargs):
        return ["helper_header.h", *super().c_headers(**kwargs)]

    def c_header_dirs(self, **kwargs):
        return [str(DATA), *super().c_header_dirs(**kwargs)]

    def c_compile_args(self, **kwargs):
        return ["-DHELPER_OFFSET=1.0", *super().c_compile_args(**kwargs)]

    def c_libraries(self, **kwargs):
        return ["m", *super().c_libraries(**kwargs)]


class MaybeAddRecipe(_Op):
    """Passes NULL for its second input through an overridden format_c_function_args."""

    __props__ = ("skip_y",)
    _cop_num_inputs = 2

    def __init__(self, skip_y=True):
        self.skip_y = skip_y
        self._load("data/dropin/maybe_add.c", "APPLY_SPECIFIC(maybe_add)")

    def make_node(self, x, y):
        return Apply(self, [as_tensor_variable(x), as_tensor_variable(y)], [pt.dvector()])

    def format_c_function_args(self, inp, out):
        if not self.skip_y:
            return super().format_c_function_args(inp, out)
        return f"{inp[0]}, NULL, &{out[0]}"


class CombineRecipe(_Op):
    """An EnumList param chooses the operation."""

    __props__ = ("how",)
    params_type = EnumList(("COMBINE_ADD", "add"), ("COMBINE_MUL", "mul"))

    def __init__(self, how="add"):
        self.how = how
        self._load("data/dropin/enum_combine.c", "APPLY_SPECIFIC(combine)")

    def get_params(self, node):
        return self.params_type.fromalias(self.how)

    def make_node(self, x, y):
        return Apply(self, [as_tensor_variable(x), as_tensor_variable(y)], [pt.dvector()])


class QuadraticRecipe(_Op):
    """Params of three kinds: a 0-d tensor, a scalar and a generic Python object."""

    __props__ = ("a", "b", "c")
    params_type = ParamsType(a=TensorType("float64", shape=()), b=ScalarType("float64"), c=generic)

    def __init__(self, a, b, c):
        self.a, self.b, self.c = np.asarray(a, dtype="float64"), float(b), c
        self._load("data/dropin/quadratic.c", "APPLY_SPECIFIC(quadratic)")

    def __eq__(self, other):
        return type(self) is type(other) and (float(self.a), self.b, self.c) == (
            float(other.a),
            other.b,
            other.c,
        )

    def __hash__(self):
        return hash((type(self), float(self.a), self.b, self.c))

    def make_node(self, x):
        return Apply(self, [as_tensor_variable(x)], [pt.dvector()])


class Scale0dRecipe(_Op):
    """A 0-d tensor input, and a ValueError from the C code."""

    __props__ = ()

    def __init__(self):
        self._load("data/dropin/scale_0d.c", "APPLY_SPECIFIC(scale)")

    def make_node(self, x, k):
        return Apply(self, [as_tensor_variable(x), as_tensor_variable(k)], [pt.dvector()])


class Scale0dWithPerformRecipe(Scale0dRecipe):
    """The same op with its own Python perform, which non-C modes must call."""

    performed = 0

    def perform(self, node, inputs, output_storage):
        type(self).performed += 1
        x, k = inputs
        if k < 0:
            raise ValueError(f"scale_0d: negative factor {int(k)}")
        output_storage[0][0] = x * k


class ShiftRecipe(_Op):
    """Its own get_c_macros adds a macro to every section it wraps."""

    __props__ = ()

    def __init__(self):
        self._load("data/dropin/shift.c", "APPLY_SPECIFIC(shift)")

    def make_node(self, x):
        return Apply(self, [as_tensor_variable(x)], [pt.dvector()])

    def get_c_macros(self, node, name, check_input=None):
        define, undef = super().get_c_macros(node, name, check_input)
        return define + "\n#define SHIFT 5", undef + "\n#undef SHIFT"


class MisalignedOutRecipe(_Op):
    """Hands back a float64 vector whose data is not aligned, which the sync must refuse."""

    __props__ = ()

    def __init__(self):
        self._load("data/dropin/misaligned_out.c", "APPLY_SPECIFIC(misaligned_out)")

    def make_node(self, x):
        return Apply(self, [as_tensor_variable(x)], [pt.dvector()])


class ComplexScaleRecipe(_Op):
    """z = x * y for a complex vector x and a real one y: z is of x's complex dtype."""

    __props__ = ()

    def __init__(self):
        self._load("data/dropin/complex_scale.c", "APPLY_SPECIFIC(complex_scale)")

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        return Apply(self, [x, y], [pt.vector(dtype=x.dtype)])

    def infer_shape(self, *args):  # (node, shapes) since PyTensor 3.3, (fgraph, ...) before
        return [args[-1][0]]


RECIPES = [
    ShiftRecipe,
    CounterRecipe,
    HelperRecipe,
    MaybeAddRecipe,
    CombineRecipe,
    QuadraticRecipe,
    Scale0dRecipe,
    Scale0dWithPerformRecipe,
    MisalignedOutRecipe,
    ComplexScaleRecipe,
]


class PyTensorCOp(pytensor_base()):
    """PyTensor's Op declares perform abstract; its own C ops define one that refuses, as
    PyTensor's test ops do. libsection's drop-in needs none."""

    def perform(self, node, inputs, output_storage):
        raise NotImplementedError(f"{type(self).__name__} runs only in C")


def _classes(base, suffix):
    """One module-level class per recipe on ``base`` (PyTensor pickles ops for its cache)."""
    out = {}
    for recipe in RECIPES:
        name = recipe.__name__.removesuffix("Recipe")
        namespace = {"__module__": __name__}
        if "__eq__" not in vars(recipe):  # PyTensor's metaclass derives __eq__ from __props__
            namespace["__props__"] = recipe.__props__
        cls = type(name + suffix, (recipe, base), namespace)
        globals()[cls.__name__] = cls
        out[name] = cls
    return out


OURS = _classes(ExternalCOp, "")
THEIRS = _classes(PyTensorCOp, "InPyTensor")
