"""Startup, commands without a model, code actions, bad arguments, config, exit."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from lsp_harness import WAIT_S
from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcInternalError
from test_lsp_ask import provider_options

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


async def test_read_returns_anchored_rows_of_the_unsaved_buffer(session, root: Path, client_name: str) -> None:
    (root / "a.py").write_text("on disk\n", encoding="utf-8")
    client = await session(client_name)
    uri = client.open(root / "a.py", "unsaved\nsecond line\n")
    result = await client.command("lich.read", {"uri": uri})
    from lich_core.hashline.anchors import line_hash

    assert result["rows"].splitlines() == [f"1:{line_hash('unsaved')}|unsaved", f"2:{line_hash('second line')}|second line"]
    assert result["version"] == 1
    assert result["total_lines"] == 2
    ranged = await client.command("lich.read", {"uri": uri, "start": 2, "end": 2})
    assert ranged["rows"] == f"2:{line_hash('second line')}|second line"


BAD_ARGUMENTS = [
    ("lich.read", [{}], "missing required field 'uri'"),
    ("lich.read", [{"uri": 5}], "field 'uri' must be a string"),
    ("lich.read", ["file:///x"], "expected an object argument"),
    ("lich.read", [{"uri": "file:///elsewhere/x.py"}], "outside the workspace root"),
    ("lich.read", [{"uri": "URI", "start": 0}], "line number >= 1"),
    ("lich.applyPatch", [{}], "missing required field 'patch'"),
    ("lich.applyPatch", [{"patch": 3}], "field 'patch' must be a string"),
    ("lich.runTool", [{"name": "read_file", "args": [1]}], "field 'args' must be an object"),
    ("lich.runTool", [{"args": {}}], "missing required field 'name'"),
    ("lich.ask", [{"prompt": 1}], "field 'prompt' must be a string"),
    ("lich.ask", [{"prompt": "x", "mode": "yolo"}], "field 'mode' must be one of apply, review"),
    ("lich.ask", [{"prompt": "x", "uri": "URI", "range": {"start": 1}}], "must be an LSP range"),
    ("lich.ask", [{"prompt": "x", "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}], "needs 'uri'"),
    ("lich.cancel", [{"task_id": 7}], "field 'task_id' must be a string"),
    ("lich.status", [{}, {}], "expected one object argument, got 2"),
    ("lich.status", 5, "workspace/executeCommand: malformed params"),
    ("lich.nope", [{}], "'lich.nope' is not defined"),
]


async def test_bad_arguments_are_clear_json_rpc_errors(session, root: Path, client_name: str) -> None:
    client = await session(client_name)
    uri = client.open(root / "x.py", "x\n")
    for command, arguments, message in BAD_ARGUMENTS:
        if isinstance(arguments, list):
            arguments = [
                {k: (uri if v == "URI" else v) for k, v in a.items()} if isinstance(a, dict) else a for a in arguments
            ]
        with pytest.raises(JsonRpcException) as caught:
            # Sent as plain JSON: the client's own types would refuse some of these shapes.
            await client.raw_request("workspace/executeCommand", {"command": command, "arguments": arguments})
        assert caught.value.code == -32602, command
        assert message in caught.value.message
        assert command in caught.value.message or "malformed" in caught.value.message
        assert "Traceback" not in caught.value.message and not caught.value.data
    # The server is still fine afterwards, and nothing was shown to the user as a crash.
    status = await client.command("lich.status", {})
    assert status["open_documents"] == 1
    assert not [m for m in client.messages if m.type == types.MessageType.Error]


async def test_run_tool_without_a_model(session, root: Path, client_name: str) -> None:
    client = await session(client_name)
    (root / "notes.txt").write_text("hello\n", encoding="utf-8")
    result = await client.command("lich.runTool", {"name": "list_dir", "args": {"path": "."}})
    assert result["ok"] is True and "notes.txt" in result["output"]
    unknown = await client.command("lich.runTool", {"name": "no_such_tool", "args": {}})
    assert unknown["ok"] is False and unknown["error"].startswith("unknown_tool:")
    tools = await client.command("lich.tools", {})
    by_name = {tool["name"]: tool for tool in tools["tools"]}
    assert by_name["terminal"]["capability"] == "process/exec"
    assert by_name["terminal"]["approval"] == "ask"
    assert by_name["edit_file"]["approval"] == "allow"
    assert all({"name", "description", "parameters", "capability", "enabled"} <= set(t) for t in tools["tools"])


def diagnostic(line: int, message: str, source: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=3)),
        message=message,
        source=source,
        severity=types.DiagnosticSeverity.Error,
    )


async def test_code_actions_for_diagnostics(session, root: Path, client_name: str, fake_provider) -> None:
    options = provider_options(
        fake_provider, code_actions=[{"title": "Add docstrings", "prompt": "Add docstrings", "kind": "refactor.rewrite.lich"}]
    )
    client = await session(client_name, init_options=options)
    uri = client.open(root / "d.py", "imp os\nx = y\n")
    diagnostics = [diagnostic(0, "invalid syntax", "python"), diagnostic(1, "undefined name 'y'\nmore", "pyflakes")]
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=1, character=0)),
        context=types.CodeActionContext(diagnostics=diagnostics),
    )
    actions = await client.text_document_code_action_async(params)
    assert [(a.title, a.kind) for a in actions] == [
        ("Ask agent…", "refactor.rewrite.lich"),
        ("Fix with agent: invalid syntax", "quickfix.lich"),
        ("Fix with agent: undefined name 'y'", "quickfix.lich"),
        ("Add docstrings", "refactor.rewrite.lich"),
    ]
    fix = actions[2]
    assert fix.command.command == "lich.ask"
    (argument,) = fix.command.arguments
    assert argument["uri"] == uri and "undefined name 'y'" in argument["prompt"]
    assert fix.diagnostics[0].message.startswith("undefined name")
    params.context.only = [types.CodeActionKind.QuickFix]
    only_fixes = await client.text_document_code_action_async(params)
    assert [a.kind for a in only_fixes] == ["quickfix.lich", "quickfix.lich"]
    # Listing actions is static: the configured model was never called.
    assert fake_provider.requests == []


async def test_bad_config_reports_the_key_and_keeps_the_last_good_one(session, root: Path) -> None:
    client = await session("visual-studio-code", init_options={"edit_mode": "review"})
    client.set_configuration({"lich": {"edit_mode": "sideways"}})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await client.wait_until(lambda: any("edit_mode" in m.message for m in client.messages))
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    (error,) = errors
    assert "sideways" in error.message
    status = await client.command("lich.status", {})
    assert status["edit_mode"] == "review"
    assert "edit_mode" in status["config_error"]
    client.set_configuration({"lich": {"edit_mode": "apply"}})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    status = await client.wait_for_status(lambda status: status["edit_mode"] == "apply")
    assert status["config_error"] is None


async def test_pushed_settings_and_workspace_file(session, root: Path) -> None:
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text('{"disk_write_policy": "editor"}', encoding="utf-8")
    client = await session("neovim@v0.7.0")
    status = await client.command("lich.status", {})
    assert status["disk_write_policy"] == "editor"
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"lich": {"edit_mode": "review"}}))
    await client.wait_for_status(lambda status: status["edit_mode"] == "review")


async def test_malformed_messages_never_leave_the_editor_waiting(session, root: Path) -> None:
    client = await session("visual-studio-code")
    # A request whose params do not fit its method is answered with an error, not dropped.
    with pytest.raises(JsonRpcException) as caught:
        await client.raw_request("textDocument/codeAction", {"textDocument": 5})
    assert caught.value.code == -32602
    assert caught.value.message == "textDocument/codeAction: malformed params"
    # Bad notifications are ignored and reported once, however often they come.
    for _ in range(3):
        client.raw_notify("textDocument/didOpen", {"textDocument": {"uri": 3}})
    await client.wait_until(lambda: any("malformed" in m.message for m in client.messages))
    status = await client.command("lich.status", {})
    assert status["open_documents"] == 0
    (shown,) = [m for m in client.messages if m.type == types.MessageType.Error]
    assert shown.message.startswith("lich: ignored a malformed textDocument/didOpen from the editor")


async def test_a_bad_answer_to_apply_edit_is_an_edit_rejected_error(session, root: Path) -> None:
    (root / "f.txt").write_text("a\n", encoding="utf-8")
    client = await session("visual-studio-code")
    client.open(root / "f.txt")
    client.editor.answer = "garbage"
    args = {"name": "write_file", "args": {"path": "f.txt", "content": "b\n"}}
    result = await asyncio.wait_for(client.command("lich.runTool", args), WAIT_S)
    assert result["ok"] is False and result["error"].startswith("edit_rejected: client_error")
    assert (root / "f.txt").read_text(encoding="utf-8") == "a\n"
    client.editor.answer = "apply"
    assert (await client.command("lich.runTool", args))["ok"] is True


class _Capture:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.sent.append(data)


async def test_an_unexpected_handler_failure_is_one_line_and_reported_once() -> None:
    """A request handler that raises: no traceback goes to the editor; the user hears of it once."""
    from lich_lsp.server import create_server

    server = create_server()
    capture = _Capture()
    server.protocol.set_writer(capture, include_headers=False)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        error = JsonRpcInternalError.of(sys.exc_info())
    assert error.data and "traceback" in error.data  # what pygls would send
    for msg_id in (1, 2):
        server.protocol._send_response(msg_id, None, error.to_response_error())
        server.report_server_error(error, FeatureRequestError)
    sent = [json.loads(data) for data in capture.sent]
    responses = [m for m in sent if "id" in m]
    assert [r["error"] for r in responses] == [{"code": -32603, "message": "RuntimeError: boom"}] * 2
    (shown,) = [m for m in sent if m.get("method") == "window/showMessage"]
    assert "RuntimeError: boom" in shown["params"]["message"] and "server log" in shown["params"]["message"]
    # A deliberate error answer (bad arguments) is not an unexpected failure.
    server.report_server_error(JsonRpcException(code=-32602, message="lich.read: bad"), FeatureRequestError)
    assert len([m for m in map(json.loads, capture.sent) if m.get("method") == "window/showMessage"]) == 1
