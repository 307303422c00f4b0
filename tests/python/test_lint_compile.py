"""The compiler's own errors at the user's lines: `section-lint --compile`, and the language
server's compile check on open and save, driven over stdio by a real LSP client (pytest-lsp).

The server's compiler is a script in front of the real one that waits at a gate (a file) before
compiling: a test sees what the server answers while a compile is under way, and that a newer
save stops the older compile, by the order of events, never by the clock.
"""

import asyncio
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

SETTINGS = """\
[signatures."op.c"]
inputs = "float64[:]"
outputs = "float64[:]"
"""


# The gate in front of the compiler (`--version` passes at once): each compile writes its pid
# to started-N, then waits for the file `open`.
GATED_CXX = f"""\
#!/bin/sh
for a in "$@"; do [ "$a" = --version ] && exec {REAL_CXX} "$@"; done
gate="$(dirname "$0")"
n=0
while [ -e "$gate/started-$n" ]; do n=$((n + 1)); done
echo $$ > "$gate/pid.tmp" && mv "$gate/pid.tmp" "$gate/started-$n"
while [ ! -e "$gate/open" ]; do sleep 0.02; done
exec {REAL_CXX} "$@"
"""

WORK = Path(tempfile.mkdtemp(prefix="section-lint-compile-"))
GATE = WORK / "gate"
GATE.mkdir()
(GATE / "cxx").write_text(GATED_CXX)
(GATE / "cxx").chmod(0o755)
SERVER_ENV = {**os.environ, "CXX": str(GATE / "cxx"), "LIBSECTION_CACHE_DIR": str(WORK / "cache")}
OPTIONS = {"python": sys.executable}


@pytest.fixture(scope="module", autouse=True)
def _work_removed():
    yield
    shutil.rmtree(WORK, ignore_errors=True)


@pytest.fixture
def gate():
    """The gate, closed, with no compile started."""
    for entry in GATE.iterdir():
        if entry.name != "cxx":
            entry.unlink()
    return GATE


def open_gate():
    (GATE / "open").write_text("")


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "section-lint.toml").write_text(SETTINGS)
    return tmp_path


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[str(SECTION_LINT), "server"], server_env=SERVER_ENV)
)
async def client(lsp_client: LanguageClient, folder, gate):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=folder.as_uri(),
            process_id=None,
            initialization_options=OPTIONS,
        )
    )
    yield
    open_gate()  # a compile still waiting ends with the server
    await lsp_client.shutdown_session()


async def next_diagnostics(client, uri):
    # A generous hang guard: a server that never publishes fails the test instead of hanging it.
    await asyncio.wait_for(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 120
    )
    return client.diagnostics[uri]


async def diagnostics_where(client, uri, wanted):
    """The first published diagnostics of `uri` that `wanted` accepts."""
    while True:
        diagnostics = await next_diagnostics(client, uri)
        if wanted(diagnostics):
            return diagnostics


async def started(n):
    """Waits until compile number `n` (0-based) has started; returns its pid."""
    marker = GATE / f"started-{n}"
    for _ in range(6000):  # a hang guard of 120 s, in steps
        if marker.exists():
            return int(marker.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError(f"compile {n} never started")


def compiler_errors(diagnostics):
    return [d for d in diagnostics if d.source == "section-lint (compiler)"]


def open_doc(client, path, text):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="c", version=1, text=text
            )
        )
    )


def change_and_save(client, path, text, version):
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    path.write_text(text)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri())
        )
    )


@pytest.mark.asyncio
async def test_an_undeclared_call_is_the_compilers_error_at_its_line_until_fixed(client, folder):
    open_gate()
    path = folder / "op.c"
    path.write_text(BROKEN)
    open_doc(client, path, BROKEN)
    found = await diagnostics_where(client, path.as_uri(), compiler_errors)
    (error,) = compiler_errors(found)
    assert error.code == "compile-error" and error.severity == types.DiagnosticSeverity.Error
    assert "not_declared_anywhere" in error.message
    assert (error.range.start.line, error.range.start.character) == (CALL_LINE, CALL_COLUMN)
    assert error.range.end.character == CALL_COLUMN + len("not_declared_anywhere")
    # The linter's findings are still there beside it.
    assert "SL901" in {d.code for d in found if d.source == "section-lint"}

    change_and_save(client, path, GOOD, 2)
    fixed = await diagnostics_where(client, path.as_uri(), lambda ds: not compiler_errors(ds))
    assert "SL901" in {d.code for d in fixed}


@pytest.mark.asyncio
async def test_the_server_answers_while_the_compiler_runs(client, folder):
    path = folder / "op.c"
    path.write_text(BROKEN)
    open_doc(client, path, BROKEN)
    await next_diagnostics(client, path.as_uri())  # the linter's, at once
    await started(0)  # the compile waits at the gate
    # A request and an edit are answered meanwhile.
    line = BROKEN.splitlines()[3]
    hover = await asyncio.wait_for(  # a hang guard: a server blocked by the compile never answers
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                position=types.Position(line=3, character=line.index("INPUT_0") + 1),
            )
        ),
        120,
    )
    assert hover is not None and "INPUT_0" in hover.contents.value
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=BROKEN + "\n")],
        )
    )
    linted = await next_diagnostics(client, path.as_uri())
    assert "SL901" in {d.code for d in linted} and not compiler_errors(linted)
    assert not (GATE / "started-1").exists()

    open_gate()
    found = await diagnostics_where(client, path.as_uri(), compiler_errors)
    assert [d.range.start.line for d in compiler_errors(found)] == [CALL_LINE]


@pytest.mark.asyncio
async def test_a_newer_save_stops_the_older_compile(client, folder):
    path = folder / "op.c"
    path.write_text(BROKEN)
    open_doc(client, path, BROKEN)
    first = await started(0)
    newer = BROKEN.replace("not_declared_anywhere", "another_undeclared")
    change_and_save(client, path, newer, 2)
    # Checks run one at a time: the second starts only once the first was stopped, and the
    # gate is still closed, so the first compiler was killed before it compiled anything.
    await started(1)
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)
    open_gate()
    done = await diagnostics_where(client, path.as_uri(), compiler_errors)
    assert ["another_undeclared" in d.message for d in compiler_errors(done)] == [True]
    assert not (GATE / "started-2").exists()


@pytest.mark.asyncio
async def test_without_a_signature_nothing_is_compiled_and_the_log_says_how(client, folder):
    path = folder / "other.c"
    open_doc(client, path, BROKEN)
    await next_diagnostics(client, path.as_uri())
    # The notice follows the diagnostics.
    for _ in range(6000):  # a hang guard of 120 s, in steps
        if told := [m.message for m in client.log_messages if "no compile errors" in m.message]:
            break
        await asyncio.sleep(0.02)
    (told,) = told
    assert "signatures" in told and "other.c" in told
    # Saving again does not say it again, nor compile: the one compile is op.c's, asked after.
    change_and_save(client, path, BROKEN, 2)
    await next_diagnostics(client, path.as_uri())
    op = folder / "op.c"
    open_doc(client, op, BROKEN)
    await started(0)
    open_gate()
    await diagnostics_where(client, op.as_uri(), compiler_errors)
    assert len([m.message for m in client.log_messages if "no compile errors" in m.message]) == 1
    assert not (GATE / "started-1").exists()


# ---- the command line -------------------------------------------------------------------------


def section_lint(*args, cwd, env=None):
    return subprocess.run(
        [SECTION_LINT, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "LIBSECTION_CACHE_DIR": str(cwd / "cache"), **(env or {})},
    )


def test_compile_reports_the_compilers_error_at_the_users_line(folder):
    (folder / "op.c").write_text(BROKEN)
    run = section_lint(
        "--compile", "--python", sys.executable, "--output-format", "concise", "op.c", cwd=folder
    )
    assert run.returncode == 1, run.stderr
    lines = run.stdout.splitlines()
    error = [line for line in lines if "compile-error" in line]
    assert len(error) == 1, run.stdout
    assert error[0].startswith(f"op.c:{CALL_LINE + 1}:{CALL_COLUMN + 1}: error: ")
    assert error[0].endswith("[compile-error]") and "not_declared_anywhere" in error[0]
    unused = BROKEN.splitlines().index("    int unused = 0; // section-lint: ignore[SL501]") + 1
    assert any(line.startswith(f"op.c:{unused}:") and "SL901" in line for line in lines)

    (folder / "op.c").write_text(GOOD)
    run = section_lint("--compile", "--python", sys.executable, "op.c", cwd=folder)
    assert "compile-" not in run.stdout, run.stdout


def test_compile_without_python_headers_says_what_to_set(folder):
    (folder / "op.c").write_text(GOOD)
    no_numpy = folder / "python-without-numpy"
    no_numpy.write_text(
        "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'numpy'\" >&2\nexit 1\n"
    )
    no_numpy.chmod(0o755)
    run = section_lint(
        "--compile", "--python", str(no_numpy), "--output-format", "concise", "op.c", cwd=folder
    )
    (line,) = [line for line in run.stdout.splitlines() if "compile-check" in line]
    assert "No module named 'numpy'" in line and "set `python`" in line, line
    assert "editor-setup" in line


def test_compile_without_a_signature_says_how_to_give_one(tmp_path):
    (tmp_path / "op.c").write_text(GOOD)
    run = section_lint("--compile", "--output-format", "concise", "op.c", cwd=tmp_path)
    (line,) = [line for line in run.stdout.splitlines() if "compile-check" in line]
    assert "no signature for op.c" in line and "--inputs" in line, line
