"""On the wire, against a real `python -m lich_lsp`: what only the protocol layer does.

Malformed params (a request is answered with an error, a notification is ignored and reported
once), commands pygls does not know, error responses without a traceback, an unreadable answer
to workspace/applyEdit, and an unexpected handler failure kept to one line. The session's own
behaviour (lich.read, argument checks, lich.runTool, code actions, config) is tested in-process
in test_session_basics.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from lsp_harness import WAIT_S
from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcInternalError

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

# Refused before the session sees them: by LichProtocol (params that do not fit the method) and by
# pygls (a command it has no handler for, answered with a traceback that must not reach the
# editor). The one session-level row checks that its InvalidParams crosses the wire as it is.
WIRE_BAD_COMMANDS = [
    ("lich.status", 5, "workspace/executeCommand: malformed params"),
    ("lich.nope", [{}], "'lich.nope' is not defined"),
    ("lich.read", [{}], "lich.read: missing required field 'uri'"),
]


async def test_malformed_messages_never_leave_the_editor_waiting(session, root: Path) -> None:
    client = await session("visual-studio-code")
    for command, arguments, message in WIRE_BAD_COMMANDS:
        with pytest.raises(JsonRpcException) as caught:
            # Sent as plain JSON: the client's own types would refuse some of these shapes.
            await client.raw_request(
                "workspace/executeCommand", {"command": command, "arguments": arguments}
            )
        assert caught.value.code == -32602, command
        assert message in caught.value.message
        assert command in caught.value.message or "malformed" in caught.value.message
        assert "Traceback" not in caught.value.message and not caught.value.data
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
    assert shown.message.startswith(
        "lich: ignored a malformed textDocument/didOpen from the editor"
    )


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
    assert [r["error"] for r in responses] == [
        {"code": -32603, "message": "RuntimeError: boom"}
    ] * 2
    (shown,) = [m for m in sent if m.get("method") == "window/showMessage"]
    assert (
        "RuntimeError: boom" in shown["params"]["message"]
        and "server log" in shown["params"]["message"]
    )
    # A deliberate error answer (bad arguments) is not an unexpected failure.
    server.report_server_error(
        JsonRpcException(code=-32602, message="lich.read: bad"), FeatureRequestError
    )
    assert (
        len([m for m in map(json.loads, capture.sent) if m.get("method") == "window/showMessage"])
        == 1
    )


async def test_the_protocol_caps_every_message_it_writes() -> None:
    """LichProtocol's own cap, under whatever the session already clipped: a log line, a message
    and a lich/event sent straight through pygls still leave within MAX_EDITOR_MESSAGE_BYTES."""
    from lich_lsp.messages import MAX_EDITOR_MESSAGE_BYTES
    from lich_lsp.server import create_server

    server = create_server()
    capture = _Capture()
    server.protocol.set_writer(capture, include_headers=False)
    huge = "é" * (3 * MAX_EDITOR_MESSAGE_BYTES)
    server.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=huge))
    server.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=huge))
    server.protocol.notify(
        "lich/event", {"type": "text_delta", "seq": 1, "ts": 0.0, "data": {"turn": 1, "text": huge}}
    )
    assert len(capture.sent) == 3
    for data in capture.sent:
        assert len(data) <= MAX_EDITOR_MESSAGE_BYTES, len(data)
    sent = [json.loads(data) for data in capture.sent]
    assert [m["method"] for m in sent] == ["window/logMessage", "window/showMessage", "lich/event"]
    for message in (
        sent[0]["params"]["message"],
        sent[1]["params"]["message"],
        sent[2]["params"]["data"]["text"],
    ):
        assert message.startswith("éé") and "[cut " in message
