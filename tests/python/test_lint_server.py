"""`section-lint server`, driven over stdio by a real LSP client (pytest-lsp).

initialize, didOpen, didChange, codeAction, hover and shutdown; the diagnostics must be the
command line's for the same text (settings, signature and suppressions included).
"""

import asyncio
import json
import subprocess

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402
from test_section_lint import SECTION_LINT  # noqa: E402

pytestmark = pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")

SETTINGS = """\
ignore = ["SL206"]

[per-file-ignores]
"quiet.c" = ["SL201"]

[signatures."op.c"]
inputs = "float64[:],float64[:]"
outputs = "float64[:]"
func-name = "APPLY_SPECIFIC(vector_add)"
"""

CLEAN = """\
#section support_code_apply

int APPLY_SPECIFIC(vector_add)(PyArrayObject* x, PyArrayObject* y, PyArrayObject** z)
{
    *z = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(x), TYPENUM_OUTPUT_0, 0);
    if (NULL == *z) return 1;
    *(DTYPE_OUTPUT_0*)PyArray_GETPTR1(*z, 0) = *(DTYPE_INPUT_0*)PyArray_GETPTR1(x, 0);
    return 0;
}
"""

# A mistyped tag (an unsafe fix: it guesses), an unused suppression (a safe fix), FAIL where it
# is not defined, and a finding its suppression comment hides.
BROKEN = (
    CLEAN.replace("#section support_code_apply", "#section suport_code_apply")
    + "int unused = 0; // section-lint: ignore[SL401]\n"
    + "#section support_code_apply\n"
    + "int APPLY_SPECIFIC(other)(void) { FAIL; return 0; }\n"
    + "int still = 1; if (still) { FAIL; } // section-lint: ignore[SL301]\n"
)


# The compile check on open and save has its own tests (test_lint_compile.py): here, only the
# linter's diagnostics are published.
NO_COMPILE = {"compileOnSave": False}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "section-lint.toml").write_text(SETTINGS)
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[str(SECTION_LINT), "server"]))
async def client(lsp_client: LanguageClient, folder):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=folder.as_uri(),
            process_id=None,
            initialization_options=NO_COMPILE,
        )
    )
    yield
    await lsp_client.shutdown_session()


def cli_findings(path, text):
    """(code, line, column) of what `section-lint --stdin-filename PATH -` finds, 0-based."""
    run = subprocess.run(
        [SECTION_LINT, "--output-format", "json", "--stdin-filename", str(path), "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=path.parent,
    )
    assert run.returncode in (0, 1), run.stderr
    found = json.loads(run.stdout)
    return sorted((d["code"], d["location"]["row"] - 1, d["location"]["column"] - 1) for d in found)


def line_of(needle, text=BROKEN):
    return text.count("\n", 0, text.index(needle))


def lsp_findings(diagnostics):
    return sorted((d.code, d.range.start.line, d.range.start.character) for d in diagnostics)


def open_doc(client, path, text, version=1):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="c", version=version, text=text
            )
        )
    )


async def published(client, uri):
    # A generous hang guard: a server that never publishes fails the test instead of hanging it.
    await asyncio.wait_for(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 60
    )
    return client.diagnostics[uri]


def whole(text):
    return types.Range(
        start=types.Position(line=0, character=0),
        end=types.Position(line=text.count("\n") + 1, character=0),
    )


async def hover(client, path, text, needle, nth=0):
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset)
    column = offset - (text.rfind("\n", 0, offset) + 1)
    result = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=line, character=column + 1),
        )
    )
    return result.contents.value if result else None


@pytest.mark.asyncio
async def test_diagnostics_on_open_and_change_match_the_command_line(client, folder):
    path = folder / "op.c"
    open_doc(client, path, CLEAN)
    assert lsp_findings(await published(client, path.as_uri())) == cli_findings(path, CLEAN) == []

    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=BROKEN)],
        )
    )
    diagnostics = await published(client, path.as_uri())
    codes = {d.code for d in diagnostics}
    assert {"SL201", "SL901", "SL301"} <= codes, codes
    assert lsp_findings(diagnostics) == cli_findings(path, BROKEN)
    # The suppressed SL301 (last line) is not reported; the unsuppressed one is.
    assert [d.range.start.line for d in diagnostics if d.code == "SL301"] == [line_of("(other)")]
    assert all(d.source == "section-lint" for d in diagnostics)

    # Per-file ignores of the settings apply to open documents as to files.
    quiet = folder / "quiet.c"
    open_doc(client, quiet, BROKEN)
    codes = {d.code for d in await published(client, quiet.as_uri())}
    assert "SL201" not in codes and "SL901" in codes


@pytest.mark.asyncio
async def test_fixes_are_quick_fixes_marked_safe_or_unsafe(client, folder):
    path = folder / "op.c"
    open_doc(client, path, BROKEN)
    diagnostics = await published(client, path.as_uri())
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            range=whole(BROKEN),
            context=types.CodeActionContext(diagnostics=list(diagnostics)),
        )
    )
    fixes = [a for a in actions if not a.title.startswith("Ignore ")]
    by_code = {a.diagnostics[0].code: a for a in fixes if a.kind == types.CodeActionKind.QuickFix}
    # Without `only`, every kind: the quick fixes, the ignore actions and one fix-all.
    assert [a.kind for a in fixes if a.kind != types.CodeActionKind.QuickFix] == [
        "source.fixAll.section-lint"
    ]

    tag = by_code["SL201"]
    assert tag.title.endswith("(unsafe)") and not tag.is_preferred
    (edit,) = tag.edit.changes[path.as_uri()]
    assert edit.new_text == "support_code_apply"
    assert edit.range.start.line == 0 and edit.range.start.character == len("#section ")

    unused = by_code["SL901"]
    assert "(unsafe)" not in unused.title and unused.is_preferred
    (edit,) = unused.edit.changes[path.as_uri()]
    assert edit.range.start.line == line_of("int unused")

    # Asking for one line gives the fixes of the findings on that line only.
    only = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            range=types.Range(
                start=types.Position(line=line_of("int unused"), character=0),
                end=types.Position(line=line_of("int unused") + 1, character=0),
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert [a.diagnostics[0].code for a in only if a.kind == "quickfix"] == ["SL901"] * 2
    assert [a.title for a in only if a.title.startswith("Ignore ")] == ["Ignore SL901 on this line"]


@pytest.mark.asyncio
async def test_hover_shows_what_a_macro_expands_to_in_its_section(client, folder):
    path = folder / "op.c"
    open_doc(client, path, BROKEN)
    await published(client, path.as_uri())
    # The first block's tag is mistyped: what it defines there is not known.
    text = await hover(client, path, BROKEN, "TYPENUM_OUTPUT_0")
    assert "not one of the nine" in text and "#define" not in text
    fixed = BROKEN.replace("suport_code_apply", "support_code_apply")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    await published(client, path.as_uri())
    assert "#define TYPENUM_OUTPUT_0 12" in await hover(client, path, fixed, "TYPENUM_OUTPUT_0")
    assert "#define DTYPE_INPUT_0 npy_float64" in await hover(client, path, fixed, "DTYPE_INPUT_0")
    applied = await hover(client, path, fixed, "APPLY_SPECIFIC")
    assert "#define APPLY_SPECIFIC(str) str##_node_" in applied
    fail = await hover(client, path, fixed, "FAIL")
    assert "Not defined" in fail and "`code`" in fail
    assert await hover(client, path, fixed, "PyArray_EMPTY") is None

    # Without a signature in the settings: the family and whether the section defines it.
    other = folder / "other.c"
    open_doc(client, other, fixed)
    await published(client, other.as_uri())
    text = await hover(client, other, fixed, "TYPENUM_OUTPUT_0")
    assert "No signature is configured" in text and "support_code_apply" in text


# ---- what a client announces: related information, pull diagnostics, watched settings ---------

CAPABLE = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
            related_information=True, code_description_support=True
        ),
        diagnostic=types.DiagnosticClientCapabilities(related_document_support=False),
    ),
    workspace=types.WorkspaceClientCapabilities(
        did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=True
        ),
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True),
    ),
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[str(SECTION_LINT), "server"]))
async def capable(lsp_client: LanguageClient, folder):
    """A client announcing relatedInformation, pull diagnostics and watched-file registration
    (the registrations the server asks for are kept in `lsp_client.registrations`)."""
    lsp_client.registrations = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams):
        lsp_client.registrations.extend(params.registrations)

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=CAPABLE,
            root_uri=folder.as_uri(),
            process_id=None,
            initialization_options=NO_COMPILE,
        )
    )
    yield
    await lsp_client.shutdown_session()


async def pulled(client, path):
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri())
        )
    )
    assert report.kind == "full"
    return report.items


def rule_url(code):
    return "https://github.com/libsection/libsection/blob/main/README.md#" + code.lower()


@pytest.mark.asyncio
async def test_diagnostics_link_their_rule_and_fold_notes_for_a_plain_client(client, folder):
    path = folder / "op.c"
    open_doc(client, path, BROKEN)
    diagnostics = await published(client, path.as_uri())
    assert all(d.code_description.href == rule_url(d.code) for d in diagnostics)
    # A client that does not announce relatedInformation: notes without a place and the fix
    # are in the message, as before.
    (tag,) = [d for d in diagnostics if d.code == "SL201"]
    assert "\nfix: " in tag.message and not tag.related_information
    noted = [d for d in diagnostics if "\nnote: " in d.message]
    assert noted, [d.message for d in diagnostics]


@pytest.mark.asyncio
async def test_pull_diagnostics_with_notes_as_related_information(capable, folder):
    path = folder / "op.c"
    open_doc(capable, path, BROKEN)
    items = await pulled(capable, path)
    # A client that pulls is not pushed to (the didOpen came before the pull, so a push would
    # have arrived first).
    assert path.as_uri() not in capable.diagnostics
    assert lsp_findings(items) == cli_findings(path, BROKEN)
    assert all(d.code_description.href == rule_url(d.code) for d in items)
    assert not any("\nnote: " in d.message or "\nfix: " in d.message for d in items)
    (tag,) = [d for d in items if d.code == "SL201"]
    (fix,) = [r for r in tag.related_information if r.message[:5] == "fix: "]
    assert fix.message.startswith("fix: ") and fix.location.uri == path.as_uri()
    assert fix.location.range.start == types.Position(line=0, character=len("#section "))
    # A note without a place of its own is shown at the finding.
    notes = [
        (d, r) for d in items for r in d.related_information or [] if r.message[:6] == "note: "
    ]
    assert notes and all(r.location.range == d.range for d, r in notes)
    # A document that is not open has no diagnostics.
    assert not await pulled(capable, folder / "closed.c")


def apply_edits(text, edits):
    """`text` with LSP text edits applied (ASCII text: a character is a byte)."""

    def offset(position):
        lines = text.split("\n")
        return sum(len(line) + 1 for line in lines[: position.line]) + position.character

    out, at = "", 0
    for edit in sorted(edits, key=lambda e: offset(e.range.start)):
        out += text[at : offset(edit.range.start)] + edit.new_text
        at = offset(edit.range.end)
    return out + text[at:]


async def code_actions(client, path, text, only=None, lines=None):
    start, end = lines or (0, text.count("\n") + 1)
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            range=types.Range(
                start=types.Position(line=start, character=0),
                end=types.Position(line=end, character=0),
            ),
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )


@pytest.mark.asyncio
async def test_fix_all_applies_what_the_command_line_fixes(client, folder):
    path = folder / "op.c"
    open_doc(client, path, BROKEN)
    await published(client, path.as_uri())
    fixed = subprocess.run(
        [SECTION_LINT, "--fix", "--stdin-filename", str(path), "-"],
        input=BROKEN,
        capture_output=True,
        text=True,
        cwd=folder,
    ).stdout
    assert fixed != BROKEN
    for only in (["source.fixAll"], ["source.fixAll.section-lint"], ["source"]):
        (action,) = await code_actions(client, path, BROKEN, only=only)
        assert action.kind == "source.fixAll.section-lint" and not action.diagnostics
        assert apply_edits(BROKEN, action.edit.changes[path.as_uri()]) == fixed
    # Quick fixes are not source actions, and a quick-fix request has no fix-all.
    assert not await code_actions(client, path, BROKEN, only=["source.organizeImports"])
    quick = await code_actions(client, path, BROKEN, only=["quickfix"])
    assert quick and all(a.kind == "quickfix" for a in quick)
    # Nothing to fix: no fix-all.
    open_doc(client, folder / "clean.c", CLEAN)
    await published(client, (folder / "clean.c").as_uri())
    assert not await code_actions(client, folder / "clean.c", CLEAN, only=["source.fixAll"])


@pytest.mark.asyncio
async def test_ignore_action_writes_the_suppression_comment(client, folder):
    path = folder / "op.c"
    text = BROKEN + "int twice = 2; \\\n  int APPLY_SPECIFIC(once) = 3;\n"
    open_doc(client, path, text)
    await published(client, path.as_uri())
    before = cli_findings(path, text)
    ignores = [a for a in await code_actions(client, path, text) if a.title.startswith("Ignore ")]
    assert {a.diagnostics[0].code for a in ignores} >= {"SL301", "SL401", "SL901"}, ignores
    # A `#section` line takes no comment: the mistyped tag has no ignore action.
    assert "SL201" not in {a.diagnostics[0].code for a in ignores}
    assert all(a.kind == "quickfix" for a in ignores)
    for action in ignores:
        (finding,) = action.diagnostics
        assert action.title == f"Ignore {finding.code} on this line"
        after = apply_edits(text, action.edit.changes[path.as_uri()])
        assert f"section-lint: ignore[{finding.code}]" in after or f", {finding.code}]" in after
        # The finding is gone and nothing else changed (no SL9xx about the new comment).
        line = finding.range.start.line
        gone = [f for f in before if f[0] == finding.code and f[1] == line]
        assert gone and cli_findings(path, after) == [f for f in before if f not in gone], after

    # A line with a suppression list gets the code added to it, not a second comment.
    line = line_of("int still", text)
    on_line = [a for a in ignores if a.diagnostics[0].range.start.line == line]
    for action in on_line:
        (edit,) = action.edit.changes[path.as_uri()]
        assert edit.new_text == ", " + action.diagnostics[0].code
    # A backslash-continued line keeps its backslash last.
    line = line_of("int twice", text)
    (edit,) = [
        a.edit.changes[path.as_uri()][0]
        for a in ignores
        if a.diagnostics[0].range.start.line == line
    ]
    assert edit.new_text.startswith("/* section-lint: ignore[") and edit.new_text.endswith("*/ ")


@pytest.mark.asyncio
async def test_settings_changes_lint_open_documents_again(capable, folder):
    path = folder / "op.c"
    open_doc(capable, path, BROKEN)
    assert "SL201" in {d.code for d in await pulled(capable, path)}
    # The registration answers `initialized`, so it came before the answer to the pull.
    (registration,) = capable.registrations
    assert registration.method == "workspace/didChangeWatchedFiles"
    globs = {w["globPattern"] for w in registration.register_options["watchers"]}
    assert globs == {"**/section-lint.toml", "**/.section-lint.toml", "**/pyproject.toml"}

    settings = folder / "section-lint.toml"
    settings.write_text(SETTINGS.replace('ignore = ["SL206"]', 'ignore = ["SL206", "SL201"]'))
    capable.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=settings.as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    assert "SL201" not in {d.code for d in await pulled(capable, path)}
    assert capable.diagnostic_refresh_count == 1


@pytest.mark.asyncio
async def test_settings_changes_are_pushed_to_a_client_that_does_not_pull(client, folder):
    path = folder / "op.c"
    open_doc(client, path, BROKEN)
    assert "SL201" in {d.code for d in await published(client, path.as_uri())}
    settings = folder / "section-lint.toml"
    settings.write_text(SETTINGS.replace('ignore = ["SL206"]', 'ignore = ["SL206", "SL201"]'))
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=settings.as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    assert "SL201" not in {d.code for d in await published(client, path.as_uri())}


def test_exit_without_shutdown_is_an_error():
    """LSP: `exit` before `shutdown` ends the server with status 1; after it, with 0."""

    def frame(message):
        body = json.dumps({"jsonrpc": "2.0", **message})
        return f"Content-Length: {len(body)}\r\n\r\n{body}"

    init = frame({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
    for messages, status in (
        ([init, frame({"method": "exit"})], 1),
        ([init, frame({"id": 2, "method": "shutdown"}), frame({"method": "exit"})], 0),
    ):
        run = subprocess.run(
            [SECTION_LINT, "server"], input="".join(messages), capture_output=True, text=True
        )
        assert run.returncode == status, run.stderr
        assert '"capabilities"' in run.stdout


# ---- any byte stream: every message answered, none ends the server ---------------------------


def frame_bytes(body: bytes | str) -> bytes:
    body = body.encode() if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def frame_json(message: dict) -> bytes:
    return frame_bytes(json.dumps({"jsonrpc": "2.0", **message}))


INIT = frame_json({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
BYE = frame_json({"id": "bye", "method": "shutdown"}) + frame_json({"method": "exit"})


def served(*parts: bytes) -> list[dict]:
    """The messages the server writes for `parts` sent after initialize and before shutdown,
    once it exited normally (status 0: it lived to the end)."""
    run = subprocess.run(
        [SECTION_LINT, "server"],
        input=INIT + b"".join(parts) + BYE,
        capture_output=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
    out, messages = run.stdout, []
    while out:
        head, _, rest = out.partition(b"\r\n\r\n")
        length = int(head.split(b":")[1])
        messages.append(json.loads(rest[:length]))
        out = rest[length:]
    assert messages[0]["id"] == 1 and messages[-1] == {
        "jsonrpc": "2.0",
        "id": "bye",
        "result": None,
    }
    return messages[1:-1]


def error_of(message: dict) -> tuple[int, str]:
    return message["error"]["code"], message["error"]["message"]


def test_deep_nesting_is_answered_not_recursed_into():
    deep = "[" * 50_000 + "]" * 50_000
    answers = served(
        frame_bytes('{"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":%s}' % deep),
        frame_bytes('{"jsonrpc":"2.0","id":%s,"method":"shutdown"}' % deep),
    )
    assert [m["id"] for m in answers] == [None, None]
    assert all("nested deeper than" in error_of(m)[1] for m in answers), answers


def test_every_missing_or_mistyped_field_is_named():
    uri = "file:///nowhere/op.c"
    doc = {"textDocument": {"uri": uri}}
    requests = {
        2: ("textDocument/hover", doc),  # no position
        3: ("textDocument/codeAction", doc),  # no range
        4: ("textDocument/hover", {**doc, "position": {"line": "1", "character": 0}}),
        5: ("textDocument/hover", {**doc, "position": {"line": -1, "character": 0}}),
        6: ("textDocument/codeAction", {**doc, "range": {"start": {"line": 0, "character": 0}}}),
        7: ("textDocument/hover", {"position": {"line": 0, "character": 0}}),
        8: ("textDocument/hover", [1, 2]),
    }
    answers = served(
        frame_json({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri}}}),
        frame_json({"method": "textDocument/didChange", "params": {**doc, "contentChanges": [1]}}),
        *(frame_json({"id": i, "method": m, "params": p}) for i, (m, p) in requests.items()),
    )
    logged = [m["params"]["message"] for m in answers if m.get("method") == "window/logMessage"]
    assert logged == [
        "section-lint: textDocument/didOpen: params.textDocument.text: missing",
        "section-lint: textDocument/didChange: params.contentChanges[0]: expected an object, "
        "got number",
    ]
    errors = {m["id"]: error_of(m) for m in answers if "id" in m}
    assert errors == {
        2: (-32602, "params.position: missing"),
        3: (-32602, "params.range: missing"),
        4: (-32602, "params.position.line: expected a non-negative integer, got string"),
        5: (-32602, "params.position.line: expected a non-negative integer, got number"),
        6: (-32602, "params.range.end: missing"),
        7: (-32602, "params.textDocument: missing"),
        8: (-32602, "params: expected an object, got array"),
    }


def test_malformed_messages_are_answered_and_skipped():
    """Each bad header block is answered, and the next message (found by its Content-Length
    header, wherever it starts) is served; bad bodies are answered one by one."""
    bad_headers = [
        (b"Content-Length: abc\r\n\r\n{}", "Content-Length `abc` is not a number of bytes"),
        (b"Content-Length: -5\r\n\r\n", "Content-Length `-5` is not a number of bytes"),
        (b"Content-Length: 99999999999999999999999\r\n\r\n", "is not a number of bytes"),
        (b"Content-Type: text/plain\r\n\r\n", "a header block without Content-Length"),
        (b"no colon here\r\n\r\n", "header line `no colon here` is not `Name: value`"),
        (b"X" * 5000 + b"\r\n", "a header line over 1024 bytes"),
        (b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "two different Content-Length"),
    ]
    parts = []
    for n, (bad, _) in enumerate(bad_headers):
        parts += [bad, frame_json({"id": n, "method": "textDocument/nothing"})]
    answers = served(*parts)
    assert len(answers) == 2 * len(bad_headers), answers
    for n, (_, why) in enumerate(bad_headers):
        code, message = error_of(answers[2 * n])
        assert answers[2 * n]["id"] is None and code == -32700 and why in message, answers[2 * n]
        assert answers[2 * n + 1]["id"] == n and error_of(answers[2 * n + 1])[0] == -32601

    answers = served(
        frame_json({"id": 12, "method": "initialize", "params": None}),  # null: no params
        frame_bytes("[1, 2]"),
        frame_bytes("{not json"),
        frame_bytes(b'{"id": 1, "method": "shutdown", "x": "\xff"}'),  # not UTF-8
        frame_json({"id": {"an": "object"}, "method": "shutdown"}),
        frame_json({"id": 9}),
        frame_json({"id": 10, "method": 5}),
        frame_json({"id": 11, "method": "textDocument/nothing"}),
    )
    assert "capabilities" in answers.pop(0)["result"]
    errors = [(m["id"], *error_of(m)) for m in answers]
    assert [e[:2] for e in errors] == [
        (None, -32600),
        (None, -32700),
        (None, -32700),
        (None, -32600),
        (9, -32600),
        (10, -32600),
        (11, -32601),
    ], errors
    assert errors[0][2] == "a message must be a JSON object, got array"
    assert errors[3][2] == "id: expected an integer or a string, got object"
    assert errors[4][2] == "method: missing"
    assert errors[5][2] == "method: expected a string, got number"
