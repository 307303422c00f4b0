"""A plain traceback (`python script.py`, no IPython) of an error about the user's op ends at the
user's code: their call, and their own code that raised, are shown; libsection's frames are
not (python/libsection/_traceback.py). The notebook's view is in test_notebook.py."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import libsection

PACKAGE = Path(libsection.__file__).resolve().parent

BROKEN = """\
#section support_code_apply
int APPLY_SPECIFIC(broken)(PyArrayObject* x, PyArrayObject** z)
{
    return undeclared_name;
}
"""

SCRIPT = textwrap.dedent(
    """\
    import sys
    import numpy as np
    import libsection

    class Broken(libsection.ExternalCOp):
        func_files = ["broken.c"]
        func_name = "APPLY_SPECIFIC(broken)"

        def output_types(self, x):
            if x != "float64[:]":
                raise TypeError(f"Broken takes float64[:], not {x}")
            return ["float64[:]"]

    {call}
    """
)


def traceback_of(
    call: str, tmp_path: Path, cache_dir: Path, script: str = SCRIPT
) -> tuple[str, list[str]]:
    """The script's stderr when `call` fails, and the files of the frames it shows."""
    (tmp_path / "broken.c").write_text(BROKEN)
    (tmp_path / "user.py").write_text(script.replace("{call}", call))
    done = subprocess.run(
        [sys.executable, "user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stderr
    frames = re.findall(r'^  File "([^"]+)", line \d+', done.stderr, re.M)
    return done.stderr, frames


def test_a_compile_error_of_an_op_class_shows_the_users_call_and_the_compiler(tmp_path, cache_dir):
    shown, frames = traceback_of("y = Broken()(np.zeros(3))", tmp_path, cache_dir)
    assert frames == [str(tmp_path / "user.py")], shown
    assert "y = Broken()(np.zeros(3))" in shown, shown
    assert re.search(r"broken\.c:4:12: error: .*undeclared_name", shown), shown
    assert "libsection.CompileError: compiling Broken failed" in shown, shown


def test_every_entry_point_hides_the_librarys_frames(tmp_path, cache_dir):
    calls = [
        'Broken().compiled("float64[:]")',
        'libsection.build("broken.c", "APPLY_SPECIFIC(broken)", inputs=["float64[:]"], '
        'outputs=["float64[:]"])',
        'libsection.build_many([dict(files="broken.c", func_name="APPLY_SPECIFIC(broken)", '
        'inputs=["float64[:]"], outputs=["float64[:]"])])',
    ]
    for call in calls:
        shown, frames = traceback_of(call, tmp_path, cache_dir)
        assert [f for f in frames if Path(f).resolve().is_relative_to(PACKAGE)] == [], shown
        assert "CompileError" in shown and "broken.c:4:12: error" in shown, shown


def test_an_error_the_users_own_code_raised_keeps_their_frame_only(tmp_path, cache_dir):
    shown, frames = traceback_of("Broken()(np.zeros(3, np.int32))", tmp_path, cache_dir)
    # The call, then the op's output_types that raised: both the user's.
    assert frames == [str(tmp_path / "user.py")] * 2, shown
    assert shown.rstrip().endswith("TypeError: Broken takes float64[:], not int32[:]"), shown


DROP_IN = textwrap.dedent(
    """\
    import numpy as np
    import pytensor, pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from libsection.pytensor import ExternalCOp

    class BrokenDropIn(ExternalCOp):
        __props__ = ()

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

    x = pt.dvector("x")
    {call}
    """
)


MODES = ("CVM", "FAST_COMPILE", "NUMBA")


def test_the_drop_in_op_and_load_hide_the_librarys_frames(tmp_path, cache_dir):
    """libsection.pytensor.ExternalCOp (its files read, its node compiled inside PyTensor's
    pytensor.function, whose frames stay) and libsection.load, as the standalone op."""
    (tmp_path / "bad_sections.c").write_text("#section not_a_tag\nz = 1;\n")
    compile_in = (
        "pytensor.function([x], BrokenDropIn('broken.c', 'APPLY_SPECIFIC(broken)')(x), mode='{}')"
    )
    calls = {compile_in.format(mode): "broken.c:4:12: error" for mode in MODES}
    calls["BrokenDropIn('bad_sections.c')"] = "SectionError"
    for call, said in calls.items():
        shown, frames = traceback_of(call, tmp_path, cache_dir, DROP_IN)
        assert [f for f in frames if Path(f).resolve().is_relative_to(PACKAGE)] == [], shown
        assert said in shown, shown
    shown, frames = traceback_of('libsection.load("bad_sections.c")', tmp_path, cache_dir)
    assert frames == [str(tmp_path / "user.py")], shown
    assert "SectionError" in shown, shown
