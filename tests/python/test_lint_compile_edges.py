"""The language server's compile check at its edges, driven over stdio by a real LSP client
(pytest-lsp), and `section-lint --compile` beside it: a folder's settings never choose a
program the server runs; a compiler run that does not end, or that eats memory, is stopped
with one diagnostic saying what stopped it; a check that hangs holds up no other document's;
a file whose name holds a newline keeps its errors.

Nothing here waits on the clock: a hang is a FIFO or a gate (a file) the stand-in compiler
waits for, and the limits are settings made small.
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")
from lint_compile_texts import BROKEN, CALL_COLUMN, CALL_LINE, GOOD  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402
from test_section_lint import SECTION_LINT  # noqa: E402

REAL_CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
pytestmark = [
    pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built"),
    pytest.mark.skipif(REAL_CXX is None, reason="no C++ compiler"),
]

SIGNATURES = """\
[signatures."*.c"]
inputs = "float64[:]"
outputs = "float64[:]"
"""


WORK = Path(tempfile.mkdtemp(prefix="section-lint-edges-"))
# Python's and NumPy's headers come from this interpreter's folder, the `python3` on PATH.
PATH = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
BASE_ENV = {**os.environ, "PATH": PATH, "LIBSECTION_CACHE_DIR": str(WORK / "cache")}


@pytest.fixture(scope="module", autouse=True)
def _work_removed():
    yield
    open_gate()  # a compile still waiting ends with the server
    try:  # so does a compiler still reading the FIFO (were it not stopped)
        os.close(os.open(FIFO, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader
        pass
    shutil.rmtree(WORK, ignore_errors=True)


def open_doc(client, path, text):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="c", version=1, text=text
            )
        )
    )


async def diagnostics_where(client, uri, wanted):
    """The first published diagnostics of `uri` that `wanted` accepts."""
    while True:
        # A generous hang guard: a server that never publishes fails the test, not hangs it.
        await asyncio.wait_for(
            client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 120
        )
        if wanted(client.diagnostics.get(uri, [])):
            return client.diagnostics[uri]


def compiler_said(diagnostics):
    return [d for d in diagnostics if d.source == "section-lint (compiler)"]


async def initialized(client, folder, options):
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=folder.as_uri(),
            process_id=None,
            initialization_options=options,
        )
    )


def section_lint(*args, cwd, **env):
    return subprocess.run(
        [SECTION_LINT, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**BASE_ENV, **env},
        timeout=180,  # a hang guard
    )


# ---- a folder's `python` is never run -----------------------------------------------------------

# A cloned repository: its settings name a program of its own as the interpreter. Editors start
# the server in the folder they open, so `./tools/py` is that folder's.
CLONED = WORK / "cloned"
MARKER = WORK / "the-folder-ran-code"
(CLONED / "tools").mkdir(parents=True)
(CLONED / "tools" / "py").write_text(f'#!/bin/sh\ntouch {MARKER}\nexec {sys.executable} "$@"\n')
(CLONED / "tools" / "py").chmod(0o755)
(CLONED / "section-lint.toml").write_text('python = "./tools/py"\n' + SIGNATURES)
# A subfolder whose pyproject.toml names the program by its full path.
(CLONED / "sub").mkdir()
(CLONED / "sub" / "pyproject.toml").write_text(
    f'[tool.section-lint]\npython = "{CLONED / "tools" / "py"}"\n'
    + SIGNATURES.replace("[signatures", "[tool.section-lint.signatures")
)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=["/bin/sh", "-c", 'cd "$0" && exec "$1" server', str(CLONED), SECTION_LINT],
        server_env=BASE_ENV,
    )
)
async def cloned_client(lsp_client: LanguageClient):
    MARKER.unlink(missing_ok=True)
    await initialized(lsp_client, CLONED, {})  # the client names no interpreter
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
@pytest.mark.parametrize("where", ["section-lint.toml", "sub/pyproject.toml"])
async def test_a_folders_python_setting_is_not_run_and_one_notice_says_where_to_set_it(
    cloned_client, where
):
    path = (CLONED / where).parent / "op.c"
    path.write_text(BROKEN)
    open_doc(cloned_client, path, BROKEN)
    # The check runs, with the headers of python3 on PATH.
    found = await diagnostics_where(cloned_client, path.as_uri(), compiler_said)
    assert [d.range.start.line for d in compiler_said(found)] == [CALL_LINE]
    assert not MARKER.exists(), f"the server ran the program {where} names"
    (notice,) = [m.message for m in cloned_client.messages if "python" in m.message]
    assert str(CLONED / where) in notice and "initializationOptions" in notice, notice
    assert "--python" in notice


def test_the_command_line_run_in_the_folder_still_reads_it():
    # Running `section-lint --compile` in a folder is asking for its settings, as `make` is.
    MARKER.unlink(missing_ok=True)
    (CLONED / "op.c").write_text(GOOD)
    run = section_lint("--compile", "op.c", cwd=CLONED)
    assert "compile-" not in run.stdout, run.stdout
    assert MARKER.exists()


# ---- limits: time and memory --------------------------------------------------------------------

LIMITED = WORK / "limited"
LIMITED.mkdir()
(LIMITED / "section-lint.toml").write_text(SIGNATURES)
FIFO = WORK / "never-written"
os.mkfifo(FIFO)

# Each includes something the compiler cannot finish: a FIFO no one writes, a `constexpr` loop of
# 10^10 steps (GCC gives up after 2^33 operations, minutes later), a device of endless zeros.
FIFO_INCLUDE = f'#section support_code\n#include "{FIFO}"\n' + GOOD
RUNAWAY_CONSTEXPR = (
    "#section support_code\n"
    "constexpr long long spin(long long n) {\n"
    "  long long s = 0;\n"
    "  for (long long i = 0; i < n; ++i)\n"
    "    for (long long j = 0; j < n; ++j) s += i ^ j;\n"
    "  return s;\n"
    "}\n"
    'static_assert(spin(100000) != 1, "never decided");\n' + GOOD
)
ZEROS_INCLUDE = '#section support_code\n#include "/dev/zero"\n' + GOOD


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[SECTION_LINT, "server"],
        server_env={
            **BASE_ENV,
            "LIBSECTION_CHECK_TIMEOUT": "3",
            "LIBSECTION_COMPILE_MEMORY": "512M",
        },
    )
)
async def limited_client(lsp_client: LanguageClient):
    await initialized(lsp_client, LIMITED, {"python": sys.executable})
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("text", "stopped_by"),
    [
        (FIFO_INCLUDE, "was stopped after 3 s, the limit LIBSECTION_CHECK_TIMEOUT sets"),
        (RUNAWAY_CONSTEXPR, "was stopped after 3 s, the limit LIBSECTION_CHECK_TIMEOUT sets"),
        (ZEROS_INCLUDE, "ran out of the 512 MiB each compiler process may allocate"),
    ],
    ids=["fifo", "constexpr", "dev-zero"],
)
async def test_a_compile_that_does_not_end_is_stopped_with_one_diagnostic(
    limited_client, tmp_path, text, stopped_by
):
    path = LIMITED / f"{tmp_path.name}.c"
    path.write_text(text)
    open_doc(limited_client, path, text)
    found = await diagnostics_where(limited_client, path.as_uri(), compiler_said)
    (said,) = compiler_said(found)
    assert said.code == "compile-check" and stopped_by in said.message, said.message
    assert said.message.startswith(f"not compile-checked: `{Path(REAL_CXX).name}` ")


def test_the_command_lines_compile_is_bounded_too(tmp_path):
    (tmp_path / "section-lint.toml").write_text(SIGNATURES)
    (tmp_path / "op.c").write_text(FIFO_INCLUDE)
    run = section_lint(
        "--compile",
        "--python",
        sys.executable,
        "--output-format",
        "concise",
        "op.c",
        cwd=tmp_path,
        LIBSECTION_CHECK_TIMEOUT="2",
    )
    (line,) = [line for line in run.stdout.splitlines() if "compile-" in line]
    assert "was stopped after 2 s, the limit LIBSECTION_CHECK_TIMEOUT sets" in line, line


# ---- one document's hang holds up no other's ----------------------------------------------------

GATE = WORK / "gate"
GATE.mkdir()
# The stand-in compiler holds at the gate only a module whose source names HOLD_AT_GATE: it
# writes its pid to `held`, then waits for the file `open`.
(GATE / "cxx").write_text(
    f"""\
#!/bin/sh
for a in "$@"; do
  case "$a" in
    --version) exec {REAL_CXX} "$@" ;;
    *.cpp) if grep -q HOLD_AT_GATE "$a" 2>/dev/null; then held=1; fi ;;
  esac
done
if [ -n "$held" ]; then
  echo $$ > "{GATE}/held.tmp" && mv "{GATE}/held.tmp" "{GATE}/held"
  while [ ! -e "{GATE}/open" ]; do sleep 0.02; done
fi
exec {REAL_CXX} "$@"
"""
)
(GATE / "cxx").chmod(0o755)
SHARED = WORK / "shared"
SHARED.mkdir()
(SHARED / "section-lint.toml").write_text(SIGNATURES)


def open_gate():
    (GATE / "open").write_text("")


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[SECTION_LINT, "server"],
        # No time limit: the held compile waits as long as the test wants.
        server_env={**BASE_ENV, "CXX": str(GATE / "cxx"), "LIBSECTION_CHECK_TIMEOUT": "0"},
    )
)
async def gated_client(lsp_client: LanguageClient):
    await initialized(lsp_client, SHARED, {"python": sys.executable})
    yield
    open_gate()
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_document_whose_check_hangs_holds_up_no_other(gated_client):
    held, other = SHARED / "held.c", SHARED / "other.c"
    held_text = BROKEN.replace("#section code\n", "#section code\n// HOLD_AT_GATE\n", 1)
    held.write_text(held_text)
    open_doc(gated_client, held, held_text)
    for _ in range(6000):  # a hang guard of 120 s, in steps
        if (GATE / "held").exists():
            break
        await asyncio.sleep(0.02)
    pid = int((GATE / "held").read_text())
    other.write_text(BROKEN)
    open_doc(gated_client, other, BROKEN)
    found = await diagnostics_where(gated_client, other.as_uri(), compiler_said)
    assert [d.range.start.line for d in compiler_said(found)] == [CALL_LINE]
    os.kill(pid, 0)  # the held compile still waits at the gate
    assert not compiler_said(gated_client.diagnostics.get(held.as_uri(), []))
    open_gate()
    found = await diagnostics_where(gated_client, held.as_uri(), compiler_said)
    assert [d.range.start.line for d in compiler_said(found)] == [CALL_LINE + 1]


# ---- names ------------------------------------------------------------------------------------


def test_the_compilers_errors_in_a_file_whose_name_holds_a_newline_keep_their_place(tmp_path):
    name = "we\nird.c"
    (tmp_path / name).write_text(BROKEN)
    run = section_lint(
        "--compile",
        "--python",
        sys.executable,
        "--inputs",
        "float64[:]",
        "--outputs",
        "float64[:]",
        "--output-format",
        "json",
        name,
        cwd=tmp_path,
    )
    errors = [d for d in json.loads(run.stdout) if d["code"].startswith("compile-")]
    assert [(d["filename"], d["location"]["row"], d["location"]["column"]) for d in errors] == [
        (name, CALL_LINE + 1, CALL_COLUMN + 1)
    ], run.stdout
    assert "not_declared_anywhere" in errors[0]["message"]
