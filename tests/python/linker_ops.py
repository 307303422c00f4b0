"""Types and ops written in Python for the linker tests (the seeds' `Double`, `add`, `mul`)."""

from pathlib import Path

DATA = Path(__file__).parent / "data" / "linker"
VTV = Path(__file__).resolve().parents[2] / "ops/vector_times_vector/vectorTimesVector.c"
VTV_FUNC = "APPLY_SPECIFIC(vector_times_vector)"


class Double:
    """A C `double` with PyTensor's `CType` methods, without PyTensor's `Type` base."""

    def __str__(self):
        return "double"

    def c_declare(self, name, sub):
        return """
        double %(name)s;
        """ % dict(name=name)

    def c_init(self, name, sub):
        return """
        %(name)s = 0.0;
        """ % dict(name=name)

    def c_extract(self, name, sub, **kwargs):
        return """
        if (!PyFloat_Check(py_%(name)s)) {
            PyErr_SetString(PyExc_TypeError, "expected a float");
            %(fail)s
        }
        %(name)s = PyFloat_AsDouble(py_%(name)s);
        """ % dict(sub, name=name)

    def c_sync(self, name, sub):
        return """
        Py_XDECREF(py_%(name)s);
        py_%(name)s = PyFloat_FromDouble(%(name)s);
        if (!py_%(name)s) {
            printf("PyFloat_FromDouble failed on: %%f\\n", %(name)s);
            Py_XINCREF(Py_None);
            py_%(name)s = Py_None;
        }
        """ % dict(name=name)

    def c_cleanup(self, name, sub):
        return ""


# Appends a line to the Python list `sys.linker_trace`, keeping any pending exception.
TRACE_SUPPORT = r"""
static void linker_test_trace(const char* what) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject* log = PySys_GetObject("linker_trace");
    if (log) {
        PyObject* line = PyUnicode_FromString(what);
        if (line) { PyList_Append(log, line); Py_DECREF(line); }
    }
    PyErr_Restore(type, value, traceback);
}
"""


class TracedDouble(Double):
    """`Double` whose cleanup records which variable it cleaned."""

    def c_support_code(self):
        return TRACE_SUPPORT

    def c_cleanup(self, name, sub):
        return f'linker_test_trace("cleanup {name}");\n'


class BinaryOp:
    """`z = x <op> y` on doubles, written as a PyTensor `COp`'s `c_code`."""

    symbol = "+"

    def c_code(self, name, inputs, outputs, sub):
        (x, y), (z,) = inputs, outputs
        return f"{z} = {x} {self.symbol} {y};"


class Add(BinaryOp):
    symbol = "+"


class Mul(BinaryOp):
    symbol = "*"


class Traced:
    """Mixin: the op's cleanup records itself."""

    def c_support_code(self):
        return TRACE_SUPPORT

    def c_code_cleanup(self, name, inputs, outputs, sub):
        return f'linker_test_trace("cleanup {type(self).__name__}");\n'


class TracedAdd(Traced, Add):
    pass


class TracedMul(Traced, Mul):
    pass


class CheckPositive(Traced):
    """Copies its input, failing with ValueError when it is negative (the middle node)."""

    def c_code(self, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        return f"""
        if ({x} < 0) {{
            PyErr_SetString(PyExc_ValueError, "CheckPositive: negative input");
            {sub["fail"]}
        }}
        {z} = {x};
        """


class FailSilently:
    """Fails without setting a Python exception: the linker must raise RuntimeError."""

    def c_code(self, name, inputs, outputs, sub):
        return sub["fail"]
