"""Hostile and clumsy use at every edge: names that reach generated C, paths, files that are not
regular or too large, byte order, 0-d tensors, C++ exceptions in ops, threads."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from linker_ops import VTV, VTV_FUNC

import libsection
from libsection import SectionError, build

BIN = Path(sys.executable).parent
SECTION_LINT = shutil.which("section-lint", path=str(BIN)) or shutil.which("section-lint")
SECTION_EXPAND = shutil.which("section-expand", path=str(BIN)) or shutil.which("section-expand")
TOOLS = [t for t in (SECTION_LINT, SECTION_EXPAND) if t]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("LIBSECTION_CACHE_DIR", str(path))
    return path


def vtv(**kwargs):
    return build(
        VTV, VTV_FUNC, inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"], **kwargs
    )


def run_limited(argv, timeout=20, memory=1 << 30, **kwargs):
    """A tool run that can neither hang nor take the machine's memory (the old code did both)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, preexec_fn=limit, **kwargs
    )


# ---- item 4: names that reach generated C ---------------------------------------------------


def test_params_field_names_must_be_c_identifiers():
    evil = "a;}; int evil() { return 0; } struct X {int b"
    with pytest.raises(ValueError, match="not a C identifier"):
        vtv(params={evil: 1})
    with pytest.raises(ValueError, match="not a C identifier"):
        vtv(params={"": 1})


@pytest.mark.parametrize("word", ["int", "return", "class"])
def test_params_field_names_that_are_keywords_are_refused_when_declared(word, cache_dir):
    with pytest.raises(ValueError, match=f"params field `{word}`: a reserved word of C or C\\+\\+"):
        vtv(params={word: 1})


def test_func_name_is_validated_before_anything_is_built():
    for bad in ["", "f() { return 0; } int g", "f;", "f\n"]:
        with pytest.raises(ValueError, match="func_name"):
            build(VTV, bad, inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])


def test_op_names_shown_in_the_source_are_printable():
    for bad in ["x\n#include </etc/passwd>", "x\\", "", "y" * 1000]:
        with pytest.raises(ValueError, match="op name"):
            vtv(name=bad)


def test_python_op_class_names_are_checked_too():
    op_type = type("Evil\nint x;", (), {"c_code": lambda self, *a: ""})
    m = libsection.Module()
    x = m.input("float64[:]")
    with pytest.raises(ValueError, match="op name"):
        m.apply(op_type(), [x], ["float64[:]"])


def test_padding_counts_are_bounded_and_fail_at_once(cache_dir):
    with pytest.raises(ValueError, match="num_inputs"):
        vtv(num_inputs=-1)
    # Refused before anything is padded: in a process whose memory could not hold a billion
    # padding outputs (the timeout only guards against a hang).
    script = (
        "import libsection\n"
        "try:\n"
        f"    libsection.build({str(VTV)!r}, {VTV_FUNC!r}, inputs=['float64[:]', 'float64[:]'],\n"
        "                     outputs=['float64[:]'], num_outputs=10**9)\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n"
    )
    refused = run_limited([sys.executable, "-c", script], timeout=120, memory=2 << 30)
    assert refused.returncode == 0, refused.stderr[-2000:]
    assert refused.stdout.startswith("refused:") and "num_outputs" in refused.stdout, refused
    assert not cache_dir.exists() or not any(cache_dir.glob("entries/*")), "something was built"


@pytest.mark.skipif(not SECTION_EXPAND, reason="section-expand is not built")
def test_section_expand_refuses_bad_names_and_padding():
    for args in (
        ["--func-name", "f;g"],
        ["--num-inputs", "1000000000"],
        ["--node-name", "x;y"],
        ["--params", "a-b:int64"],
    ):
        run = run_limited(
            [
                SECTION_EXPAND,
                str(VTV),
                "--inputs",
                "float64[:],float64[:]",
                "--outputs",
                "float64[:]",
                *args,
            ]
        )
        assert run.returncode == 2, (args, run.stderr)
        assert "error" in run.stderr


@pytest.mark.skipif(not SECTION_LINT, reason="section-lint is not built")
def test_section_lint_refuses_a_bad_func_name():
    run = run_limited([SECTION_LINT, str(VTV), "--func-name", "f() {}"])
    assert run.returncode == 2
    assert "func_name" in run.stderr


# ---- item 5: compiler output with very long lines ------------------------------------------


def test_a_megabyte_long_error_line_is_a_compile_error_not_a_crash(tmp_path):
    # The compiler quotes the 1 MB name in its errors; the old regex reader overflowed the stack.
    code = f"""
import libsection
try:
    libsection.build({str(VTV)!r}, "f" * (1 << 20), ["float64[:]", "float64[:]"], ["float64[:]"])
except libsection.CompileError as e:
    assert len(str(e)) < 100_000, len(str(e))
    assert e.diagnostics and all(len(d.message) < 3000 for d in e.diagnostics)
    print("compile error")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "compile error"


# ---- item 6: C++ exceptions in an op --------------------------------------------------------

THROWER = """#section support_code
#include <stdexcept>

#section support_code_apply
int APPLY_SPECIFIC(may_throw)(PyArrayObject* x, PyArrayObject** z) {
    if (PyArray_SIZE(x) == 0) throw std::runtime_error("empty input");
    if (PyArray_SIZE(x) == 1) throw 42;
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_CORDER);
    return *z ? 0 : 1;
}
"""


def test_a_cpp_exception_in_an_op_is_a_runtime_error_not_an_abort(tmp_path):
    (tmp_path / "thrower.c").write_text(THROWER)
    op = build(
        tmp_path / "thrower.c",
        "APPLY_SPECIFIC(may_throw)",
        ["float64[:]"],
        ["float64[:]"],
        name="MayThrow",
    )
    x = np.empty(0)
    before = sys.getrefcount(x)
    for _ in range(100):
        with pytest.raises(
            RuntimeError, match=r"MayThrow \(node 0\): C\+\+ exception: empty input"
        ):
            op(x)
    assert sys.getrefcount(x) == before  # the input's cleanup ran every time
    with pytest.raises(RuntimeError, match="C\\+\\+ exception of an unknown type"):
        op(np.ones(1))
    assert op(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]  # the op still works


# ---- item 7 and drop-in item 7: byte order, 0-d tensors, scalars where arrays are needed ---


def test_big_endian_arrays_are_refused_naming_the_input():
    op = vtv()
    x = np.arange(3.0)
    with pytest.raises(TypeError, match="input 0.*non-native byte order"):
        op(x.astype(">f8"), x)
    with pytest.raises(TypeError, match="input 1.*non-native byte order"):
        op(x, x.astype(">f8"))
    assert op(x, x.astype(">f8").astype("=f8")).tolist() == [0.0, 1.0, 4.0]


ZERO_D = """#section support_code_apply
int APPLY_SPECIFIC(twice)(PyArrayObject* x, PyArrayObject** z) {
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_EMPTY(0, NULL, TYPENUM_OUTPUT_0, 0);
    if (!*z) return 1;
    *(DTYPE_OUTPUT_0*)PyArray_DATA(*z) = 2 * *(DTYPE_INPUT_0*)PyArray_DATA(x);
    return 0;
}
"""


def test_zero_d_tensors_have_a_type_string(tmp_path):
    # np.float64(1).reshape(()) is a NumPy scalar again, not an array: scalars stay scalars.
    assert libsection.type_of(np.asarray(np.float64(1)).reshape(())) == "float64[]"
    assert libsection.type_of(np.array(3, dtype=np.int32)) == "int32[]"
    assert libsection.tensor("float64", 0) == "float64[]"
    assert libsection.type_of(np.float64(1)) == "float64"  # NumPy scalars stay scalars
    (tmp_path / "twice.c").write_text(ZERO_D)
    op = build(tmp_path / "twice.c", "APPLY_SPECIFIC(twice)", ["float64[]"], ["float64[]"])
    out = op(np.array(2.5))
    assert out.shape == () and out == 5.0
    with pytest.raises(TypeError, match=r"expected a float64\[\] array"):
        op(np.array([2.5]))

    class Twice(libsection.ExternalCOp):
        func_files = [tmp_path / "twice.c"]
        func_name = "APPLY_SPECIFIC(twice)"

        def output_types(self, x):
            return [x]

    assert Twice()(np.array(4.0)) == 8.0


def test_a_python_float_where_the_function_takes_an_array_is_a_type_error():
    from vector_times_vector.op import VectorTimesVector

    with pytest.raises(TypeError, match=r"input 0: expected an array .*PyArrayObject.*float64"):
        VectorTimesVector()(1.0, np.ones(3))
    with pytest.raises(TypeError, match=r"input 1: expected an array"):
        build(VTV, VTV_FUNC, ["float64[:]", "int64"], ["float64[:]"])
    assert VectorTimesVector()(np.ones(2), np.ones(2)).tolist() == [1.0, 1.0]


# ---- item 8 and 14: paths --------------------------------------------------------------------


def test_a_nul_byte_in_a_path_is_a_value_error_like_open(tmp_path):
    (tmp_path / "x.txt").write_text("#section code\nx\n")
    with pytest.raises(ValueError, match="NUL byte"):
        libsection.load_sections([str(tmp_path / "x.txt") + "\0.c"])
    with pytest.raises(ValueError):
        build(str(tmp_path / "x.txt") + "\0.c", None, [], ["float64[:]"])


def test_file_names_need_not_be_utf8(tmp_path):
    raw = os.fsencode(tmp_path) + b"/caf\xe9.c"
    with open(raw, "w") as f:
        f.write("#section support_code\nint x;\n")
    as_str = os.fsdecode(raw)  # surrogateescape
    assert libsection.load_sections([as_str]) == {"support_code": "\nint x;\n"}
    assert libsection.load_sections(raw) == {"support_code": "\nint x;\n"}
    with pytest.raises(FileNotFoundError) as missing:
        libsection.load_sections([as_str + "x"])
    assert missing.value.filename == as_str + "x"
    with open(raw, "w") as f:
        f.write("int stray;\n#section code\n")
    with pytest.raises(SectionError, match=r"caf\\xe9.c"):
        libsection.load_sections([as_str])


# ---- item 9: what is read, and how much --------------------------------------------------


def test_a_fifo_is_refused_at_once_everywhere(tmp_path):
    fifo = tmp_path / "op.c"
    os.mkfifo(fifo)
    code = f"import libsection; libsection.load_sections([{str(fifo)!r}])"
    run = run_limited([sys.executable, "-c", code], timeout=20)
    assert run.returncode == 1 and "a FIFO, not a regular file" in run.stderr
    for tool, status in ((SECTION_LINT, 1), (SECTION_EXPAND, 2)):
        if tool:
            run = run_limited([tool, str(fifo)], timeout=20)
            assert run.returncode == status, run
            assert "a FIFO, not a regular file" in run.stdout + run.stderr


def test_devices_are_refused_not_read_until_memory_runs_out():
    code = "import libsection; libsection.load_sections(['/dev/zero'])"
    run = run_limited([sys.executable, "-c", code])
    assert run.returncode == 1 and "SectionError" in run.stderr
    assert "a character device" in run.stderr
    for tool in TOOLS:
        run = run_limited([tool, "/dev/zero"], timeout=20)
        assert run.returncode in (1, 2), run  # not -6 (std::bad_alloc, abort)
        assert "a character device" in run.stdout + run.stderr


def test_files_over_the_size_limit_are_refused(tmp_path, monkeypatch):
    path = tmp_path / "big.c"
    path.write_text("#section code\n" + "x" * 5000 + "\n")
    monkeypatch.setenv("LIBSECTION_MAX_FILE_BYTES", "4096")
    with pytest.raises(SectionError, match="over the limit of 4096 bytes"):
        libsection.load_sections([path])
    if SECTION_LINT:
        run = run_limited([SECTION_LINT, str(path)])
        assert run.returncode == 1 and "LIBSECTION_MAX_FILE_BYTES" in run.stdout
    monkeypatch.delenv("LIBSECTION_MAX_FILE_BYTES")
    assert "code" in libsection.load_sections([path])


def test_messages_quote_a_bounded_excerpt_of_a_long_line(tmp_path):
    path = tmp_path / "stray.c"
    path.write_text("int " + "s" * (4 << 20) + ";\n#section code\nx\n")
    with pytest.raises(SectionError) as error:
        libsection.load_sections([path])
    assert len(str(error.value)) < 4000
    assert "…" in str(error.value)
    if SECTION_LINT:
        run = run_limited([SECTION_LINT, str(path)])
        assert run.returncode == 1 and len(run.stdout) < 4000


@pytest.mark.skipif(not SECTION_LINT, reason="section-lint is not built")
def test_lint_memory_is_linear_in_the_file_size_with_a_small_constant(tmp_path, monkeypatch):
    size = 32 << 20
    line = "int f(int a, int b) { return a * (b + 1); } /* x */\n"
    path = tmp_path / "big.c"
    path.write_text("#section support_code\n" + line * (size // len(line)))
    monkeypatch.setenv("LIBSECTION_MAX_FILE_BYTES", str(size * 2))
    run = subprocess.run(
        ["/usr/bin/time", "-f", "%M", SECTION_LINT, "--exit-zero", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    peak_kib = int(run.stderr.strip().splitlines()[-1])
    assert peak_kib * 1024 < 8 * size, f"peak {peak_kib} KiB for a {size >> 20} MiB file"


def run_as_nobody():
    if os.geteuid() == 0:
        return lambda: (os.setgid(65534), os.setuid(65534))
    return None


@pytest.mark.skipif(not SECTION_LINT, reason="section-lint is not built")
def test_unreadable_folders_are_reported_not_skipped(tmp_path):
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="libsection-unreadable-", dir="/tmp"))
    # A copy nobody can run (the installed one may sit under root's private home).
    lint = shutil.copy(SECTION_LINT, Path(tempfile.mkdtemp(prefix="libsection-lint-", dir="/tmp")))
    Path(lint).parent.chmod(0o755)
    Path(lint).chmod(0o755)
    try:
        top.chmod(0o755)
        (top / "ok").mkdir()
        (top / "ok" / "a.c").write_text("#section support_code\nint a;\n")
        (top / "ok").chmod(0o755)
        (top / "ok" / "a.c").chmod(0o644)
        (top / "closed").mkdir(mode=0o000)
        (top / "closed").chmod(0o000)
        run = subprocess.run(
            [lint, "--output-format", "concise", str(top)],
            capture_output=True,
            text=True,
            preexec_fn=run_as_nobody(),
        )
        assert run.returncode == 1, run
        assert f"cannot read folder '{top / 'closed'}'" in run.stdout
        top.chmod(0o000)
        run = subprocess.run(
            [lint, str(top)], capture_output=True, text=True, preexec_fn=run_as_nobody()
        )
        assert run.returncode == 1
        assert f"cannot read folder '{top}'" in run.stdout
        assert "SL204" not in run.stdout
    finally:
        top.chmod(0o755)
        (top / "closed").chmod(0o755)
        shutil.rmtree(top)
        shutil.rmtree(Path(lint).parent)


# ---- item 10: threads ----------------------------------------------------------------------

SLOW_COPY = """#section support_code_apply
#include <unistd.h>
int APPLY_SPECIFIC(slow_copy)(PyArrayObject* x, PyArrayObject** z) {
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_CORDER);
    if (!*z) return 1;
    Py_BEGIN_ALLOW_THREADS
    usleep(200);
    Py_END_ALLOW_THREADS
    return 0;
}
"""


def test_threads_calling_a_gil_releasing_op_wait_their_turn(tmp_path):
    (tmp_path / "slow.c").write_text(SLOW_COPY)
    op = build(tmp_path / "slow.c", "APPLY_SPECIFIC(slow_copy)", ["float64[:]"], ["float64[:]"])
    errors, wrong = [], []

    def work(k):
        for i in range(50):
            try:
                if op(np.full(4, float(k * 1000 + i))).tolist() != [float(k * 1000 + i)] * 4:
                    wrong.append((k, i))
            except Exception as e:
                errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and wrong == []


REENTER = """#section support_code_apply
int APPLY_SPECIFIC(call_back)(PyObject* callback, PyArrayObject** z) {
    PyObject* result = PyObject_CallNoArgs(callback);
    if (!result) return 1;
    Py_DECREF(result);
    Py_XDECREF(*z);
    npy_intp one = 1;
    *z = (PyArrayObject*)PyArray_ZEROS(1, &one, NPY_FLOAT64, 0);
    return *z ? 0 : 1;
}
"""


def test_an_op_calling_itself_from_its_own_thread_gets_a_clear_error(tmp_path):
    (tmp_path / "reenter.c").write_text(REENTER)
    op = build(
        tmp_path / "reenter.c",
        "APPLY_SPECIFIC(call_back)",
        ["object"],
        ["float64[:]"],
        name="CallBack",
    )

    def again():
        op(lambda: None)

    with pytest.raises(RuntimeError, match="already running in this thread"):
        op(again)
    assert op(lambda: None).tolist() == [0.0]
