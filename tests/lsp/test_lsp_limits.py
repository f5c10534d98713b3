"""Limits on what the server takes in and sends out, on the wire.

Against a real `python -m lich_lsp` (stdio, TCP, WebSocket): oversized frames and bad input that
only the protocol layer sees (didChange for a document never opened, $/cancelRequest with an
odd id) are refused without taking the server down or showing an "unexpected error"; the
WebSocket transport takes messages up to the frame limit. Pure unit tests here: the frame reader
over awkward chunks and the clipping of text and events to the wire limit. The session's limits
(the response cap, coalesced and clipped events, absurd ranges, pruned tasks) are tested
in-process in test_session_limits.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import WAIT_S, uri_of
from lsprotocol import types

from lich_lsp.frames import MAX_MESSAGE_BYTES, FrameReader
from lich_lsp.messages import MAX_EDITOR_MESSAGE_BYTES

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

CUT_MARKER = re.compile(r"… \[cut (\d+) chars\]$")


def _wire_size(value: Any) -> int:
    """Bytes of `value` as pygls puts it on the wire (json.dumps, ASCII-escaped)."""
    return len(json.dumps(value))


def _error_popups(client: Any) -> list[str]:
    return [m.message for m in client.messages if m.type == types.MessageType.Error]


# --- bad input from the editor --------------------------------------------------------------------


async def test_an_oversized_frame_is_refused_and_the_server_stays_up(session) -> None:
    client = await session("visual-studio-code")
    client.protocol.writer.write(b"Content-Length: 99999999999\r\n\r\n")
    status = await asyncio.wait_for(client.command("lich.status", {}), WAIT_S)
    assert status["version"]
    await client.wait_until(lambda: any("99999999999" in m.message for m in client.messages))
    assert _error_popups(client) == []
    # And again, with a body that really follows: it is skipped, the next request is answered.
    body = b'{"jsonrpc": "2.0", "method": "x", "params": "' + b"q" * 70_000 + b'"}'
    client.protocol.writer.write(b"Content-Length: %d\r\n\r\n" % (MAX_MESSAGE_BYTES + 1) + body)
    assert (await asyncio.wait_for(client.command("lich.status", {}), WAIT_S))["version"]
    assert client._server.returncode is None


async def test_did_change_for_an_unknown_document_is_ignored(session, root: Path) -> None:
    client = await session("visual-studio-code")
    uri = uri_of(root / "never-opened.py")
    client.raw_notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x = 2\n"}]},
    )
    # Messages are handled in order: once this is answered, the notification was handled.
    status = await client.command("lich.status", {})
    assert status["open_documents"] == 0
    assert _error_popups(client) == []
    # The document can still be opened and changed normally afterwards.
    (root / "never-opened.py").write_text("x = 1\n", encoding="utf-8")
    opened = client.open(root / "never-opened.py")
    client.type_text(opened, "x = 3\n")
    read = await client.command("lich.read", {"uri": opened})
    assert read["rows"].endswith("|x = 3")


async def test_cancel_request_with_an_object_id_is_ignored(session) -> None:
    client = await session("visual-studio-code")
    client.raw_notify("$/cancelRequest", {"id": {"not": "an id"}})
    client.raw_notify("$/cancelRequest", {"id": 1.5})
    client.raw_notify("$/cancelRequest", {})
    status = await client.command("lich.status", {})
    assert status["version"]
    assert client.messages == []


# --- the frame reader in-process, and the TCP transport --------------------------------------------


class _Chunks:
    """A byte source that hands out the given chunks (then end of input)."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)

    async def __call__(self, size: int) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


def _frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _frames(reader: FrameReader) -> list[bytes]:
    """What pygls' reading loop gets out of `reader`: the bodies, in order."""
    bodies = []
    length = 0
    while True:
        header = await reader.readline()
        if not header:
            return bodies
        if header.startswith(b"Content-Length: "):
            length = int(header.split(b":")[1])
        elif header == b"\r\n" and length:
            bodies.append(await reader.readexactly(length))
            length = 0


async def test_frame_reader_skips_oversized_and_overlong_input() -> None:
    rejected: list[str] = []
    good = _frame({"jsonrpc": "2.0", "method": "a"})
    other = _frame({"jsonrpc": "2.0", "method": "b"})
    stream = (
        good
        + b"Content-Length: 99999999999\r\n\r\n"
        + b'{"huge": "'
        + b"h" * 5000
        + b'"}'
        + other
        + b"Content-Type: "
        + b"t" * 10_000
        + b"\r\n"  # an endless header line
        + good
    )
    # Delivered in awkward pieces: headers split mid-line, bodies split anywhere.
    pieces = [stream[i : i + 7] for i in range(0, len(stream), 7)]
    reader = FrameReader(_Chunks(*pieces), on_reject=rejected.append)
    bodies = await asyncio.wait_for(_frames(reader), 10)
    assert [json.loads(b)["method"] for b in bodies] == ["a", "b", "a"]
    assert len(rejected) == 2
    assert "99999999999" in rejected[0] and "64 MiB" in rejected[0]
    assert "header line" in rejected[1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _read_frame(reader: asyncio.StreamReader) -> dict[str, Any]:
    length = 0
    while True:
        line = await reader.readline()
        if not line:
            raise AssertionError("the server closed the connection")
        if line.startswith(b"Content-Length: "):
            length = int(line.split(b":")[1])
        elif line == b"\r\n":
            return json.loads(await reader.readexactly(length))


async def test_tcp_transport_refuses_an_oversized_frame_and_stays_up(root: Path) -> None:
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lich_lsp",
        "--tcp",
        "--port",
        str(port),
        "--log-level",
        "ERROR",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while True:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.05)
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": uri_of(root), "capabilities": {}},
        }
        writer.write(_frame(init))
        writer.write(b"Content-Length: 99999999999\r\n\r\n")
        writer.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        status = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "workspace/executeCommand",
            "params": {"command": "lich.status", "arguments": [{}]},
        }
        writer.write(_frame(status))
        await writer.drain()
        answers: dict[Any, Any] = {}
        while 2 not in answers:
            message = await asyncio.wait_for(_read_frame(reader), WAIT_S)
            if "id" in message and "method" not in message:
                answers[message["id"]] = message
        assert "capabilities" in answers[1]["result"]
        assert answers[2]["result"]["version"]
        assert proc.returncode is None
        writer.close()
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def test_websocket_transport_takes_messages_up_to_the_limit(root: Path) -> None:
    """The WebSocket library's own default (1 MiB) would close the connection on a large didOpen."""
    pytest.importorskip("websockets")
    from websockets.asyncio.client import connect

    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lich_lsp",
        "--ws",
        "--port",
        str(port),
        "--log-level",
        "ERROR",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while True:
            try:
                websocket = await connect(f"ws://127.0.0.1:{port}", max_size=None)
                break
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.05)
        async with websocket:
            big = "x = 1\n" * 400_000  # 2.4 MB
            messages = [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"processId": None, "rootUri": uri_of(root), "capabilities": {}},
                },
                {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didOpen",
                    "params": {
                        "textDocument": {
                            "uri": uri_of(root / "big.py"),
                            "languageId": "python",
                            "version": 1,
                            "text": big,
                        }
                    },
                },
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "workspace/executeCommand",
                    "params": {"command": "lich.status", "arguments": [{}]},
                },
            ]
            for message in messages:
                await websocket.send(json.dumps(message))
            answers: dict[Any, Any] = {}
            while 2 not in answers:
                message = json.loads(await asyncio.wait_for(websocket.recv(), WAIT_S))
                if "id" in message and "method" not in message:
                    answers[message["id"]] = message
            assert answers[2]["result"]["open_documents"] == 1
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


def test_clipping_counts_what_it_cuts_and_fits_the_wire() -> None:
    from lich_lsp.messages import clip_event, clip_text

    assert clip_text("short", 1000) == "short"
    for text in ("a" * 200_000, "é" * 200_000, "😀" * 50_000, "a" * 30_000 + "😀" * 30_000):
        clipped = clip_text(text, 65_536)
        assert _wire_size(clipped) <= 65_536
        marker = CUT_MARKER.search(clipped)
        assert marker is not None
        assert len(clipped) - len(marker.group(0)) + int(marker.group(1)) == len(text)
    # Characters dropped earlier are counted in the marker too.
    assert clip_text("abc", 1000, already_cut=7) == "abc… [cut 7 chars]"
    event = {
        "type": "tool_call_start",
        "seq": 3,
        "data": {"name": "write_file", "arguments": {"content": "z" * 500_000}},
    }
    clipped_event = clip_event(event)
    assert _wire_size(clipped_event) <= MAX_EDITOR_MESSAGE_BYTES
    assert clipped_event["data"]["name"] == "write_file"
    assert "… [cut " in clipped_event["data"]["arguments"]["content"]
    many = {"type": "tool_call_end", "seq": 4, "data": {"name": "x", "rows": ["r"] * 100_000}}
    clipped_many = clip_event(many)
    assert _wire_size(clipped_many) <= MAX_EDITOR_MESSAGE_BYTES
    assert clipped_many["data"]["name"] == "x" and "was cut" in clipped_many["data"]["cut"]
