"""`section-lint server`, driven over stdio by a real LSP client (pytest-lsp).

initialize, didOpen, didChange, codeAction, hover and shutdown; the diagnostics must be the
command line's for the same text (settings, signature and suppressions included).
"""

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


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "section-lint.toml").write_text(SETTINGS)
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[str(SECTION_LINT), "server"]))
async def client(lsp_client: LanguageClient, folder):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=folder.as_uri(), process_id=None
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
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
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
    by_code = {a.diagnostics[0].code: a for a in actions}
    assert all(a.kind == types.CodeActionKind.QuickFix for a in actions)

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
    assert [a.diagnostics[0].code for a in only] == ["SL901"]


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
