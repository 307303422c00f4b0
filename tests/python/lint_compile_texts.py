"""The section file the compile check's tests compile (test_lint_compile.py,
test_lint_compile_edges.py): good, and with a call of a function nobody declares."""

# ops/square's code section, with a call of a function nobody declares, and an unused
# suppression comment (the linter's SL901) on another line.
GOOD = """\
#section code

{
    npy_intp n = PyArray_DIMS(INPUT_0)[0];
    Py_XDECREF(OUTPUT_0);
    OUTPUT_0 = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(INPUT_0), TYPENUM_OUTPUT_0, 0);
    if (NULL == OUTPUT_0) FAIL;
    for (npy_intp i = 0; i < n; ++i) {
        DTYPE_INPUT_0 v = *(DTYPE_INPUT_0*)PyArray_GETPTR1(INPUT_0, i);
        *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(OUTPUT_0, i) = v * v;
    }
    int unused = 0; // section-lint: ignore[SL501]
}
"""
BROKEN = GOOD.replace("v * v;", "v * v;\n        not_declared_anywhere(v);")
CALL_LINE = BROKEN.splitlines().index("        not_declared_anywhere(v);")
CALL_COLUMN = len("        ")
