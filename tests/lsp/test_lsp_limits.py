"""Limits on what the server takes in and sends out, against a real `python -m lich_lsp`.

A runaway model answer stops at the response cap with a clear error; streamed text reaches the
editor coalesced (at most 20 `lich/event` notifications a second per task) and every message to
the editor stays under 64 KiB; oversized or bad input from the editor is refused without taking
the server down or showing an "unexpected error"; finished tasks are pruned.
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
from pygls.exceptions import JsonRpcException
from test_lsp_ask import provider_options

from lich_core.hashline.anchors import line_hashes
from lich_lsp.frames import MAX_MESSAGE_BYTES, FrameReader
from lich_lsp.tasks import EVENT_COALESCE_INTERVAL_S, MAX_EDITOR_MESSAGE_BYTES, MAX_FINISHED_TASKS

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

CUT_MARKER = re.compile(r"… \[cut (\d+) chars\]$")


def _wire_size(value: Any) -> int:
    """Bytes of `value` as pygls puts it on the wire (json.dumps, ASCII-escaped)."""
    return len(json.dumps(value))


def _error_popups(client: Any) -> list[str]:
    return [m.message for m in client.messages if m.type == types.MessageType.Error]


def _text_events(client: Any) -> list[dict[str, Any]]:
    return [e for e in client.editor.events if e.get("type") == "text_delta"]


def _log_payloads(client: Any) -> list[str]:
    return [m.message for m in client.log_messages]


def _streamed_chars(client: Any) -> int:
    """Characters of streamed text the server handled: shown, plus what the cut markers say was cut."""
    total = 0
    for event in _text_events(client):
        text = event["data"]["text"]
        marker = CUT_MARKER.search(text)
        total += len(text) - len(marker.group(0)) + int(marker.group(1)) if marker else len(text)
    return total


# --- a runaway answer -----------------------------------------------------------------------------


async def test_an_endless_stream_ends_the_task_with_a_clear_error(session, fake_provider) -> None:
    fake_provider.script({"endless": True, "text": "w" * 1000})
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    result = await asyncio.wait_for(client.command("lich.ask", {"prompt": "talk forever"}), WAIT_S)
    assert result["stopped_reason"] == "error"
    assert result["error"].startswith("response_too_large: ")
    await client.wait_until(lambda: any(e.get("type") == "run_end" for e in client.editor.events))
    await client.wait_until(lambda: any("failed: response_too_large" in m.message for m in client.messages))
    # About a megabyte of text streamed, yet only a few coalesced notifications carried it.
    events = client.editor.events
    texts = _text_events(client)
    run_start = next(e for e in events if e["type"] == "run_start")
    run_end = next(e for e in events if e["type"] == "run_end")
    duration_s = run_end["ts"] - run_start["ts"]
    assert texts, "some text was shown"
    assert len(texts) <= duration_s / EVENT_COALESCE_INTERVAL_S + 2, (len(texts), duration_s)
    assert any(e["data"].get("coalesced", 1) > 1 for e in texts)
    # Each message to the editor is bounded; what was cut is said.
    for event in events:
        assert _wire_size(event) <= MAX_EDITOR_MESSAGE_BYTES
    for message in _log_payloads(client) + [m.message for m in client.messages]:
        assert _wire_size(message) <= MAX_EDITOR_MESSAGE_BYTES
    assistant = [m for m in _log_payloads(client) if "assistant: " in m]
    assert assistant and "… [cut " in assistant[-1] and assistant[-1].endswith(" chars]")
    assert fake_provider.disconnects == [1]


async def test_cancelling_a_long_answer_sends_a_bounded_transcript(session, fake_provider) -> None:
    # 300 KB of text, then the model goes quiet: the task sits with it until cancelled.
    fake_provider.script({"endless": True, "text": "v" * 1000, "stall_after_chunks": 300})
    client = await session("neovim", init_options=provider_options(fake_provider))
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "talk, then stall"}))
    await client.wait_until(lambda: _streamed_chars(client) == 300_000)
    await client.command("lich.cancel", {})
    result = await asyncio.wait_for(ask, WAIT_S)
    assert result["stopped_reason"] == "aborted"
    await client.wait_until(lambda: any("assistant: " in m for m in _log_payloads(client)))
    for message in _log_payloads(client):
        assert _wire_size(message) <= MAX_EDITOR_MESSAGE_BYTES
    (assistant,) = [m for m in _log_payloads(client) if "assistant: " in m]
    assert "… [cut " in assistant
    await client.wait_until(lambda: fake_provider.disconnects == [1])


async def test_streamed_text_is_coalesced_in_order(session, fake_provider) -> None:
    # 400 small pieces over ~2 s, then a tool call: text and other events keep their order.
    fake_provider.script(
        {"text": "".join(f"<{i}>" for i in range(400)), "chunks": 400, "chunk_delay_s": 0.005,
         "tool_calls": [{"name": "find_files", "arguments": {"pattern": "*.nothing"}}]},
        {"text": "done"},
    )
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    result = await asyncio.wait_for(client.command("lich.ask", {"prompt": "stream then call"}), WAIT_S)
    assert result["stopped_reason"] == "final"
    await client.wait_until(lambda: any(e.get("type") == "run_end" for e in client.editor.events))
    events = client.editor.events
    first_turn = [e for e in events if e["type"] == "text_delta" and e["data"]["turn"] == 1]
    assert "".join(e["data"]["text"] for e in first_turn) == "".join(f"<{i}>" for i in range(400))
    assert len(first_turn) < 400
    kinds = [e["type"] for e in events]
    last_text = max(i for i, e in enumerate(events) if e in first_turn)
    assert last_text < kinds.index("llm_end") < kinds.index("tool_call_start")
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs)


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


async def test_ask_with_an_absurd_range_is_invalid_params(session, root: Path) -> None:
    (root / "a.py").write_text("x = 1\n", encoding="utf-8")
    client = await session("visual-studio-code")
    uri = uri_of(root / "a.py")
    far = {"start": {"line": 10**18, "character": 0}, "end": {"line": 10**18, "character": 10**18}}
    with pytest.raises(JsonRpcException) as caught:
        await client.command("lich.ask", {"prompt": "p", "uri": uri, "range": far})
    assert caught.value.code == -32602
    assert caught.value.message.startswith("lich.ask: field 'range'")
    with pytest.raises(JsonRpcException) as caught:
        await client.command("lich.read", {"uri": uri, "start": 10**18})
    assert caught.value.code == -32602
    assert _error_popups(client) == []


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


# --- bookkeeping ----------------------------------------------------------------------------------


async def test_finished_tasks_are_pruned(session, fake_provider) -> None:
    count = MAX_FINISHED_TASKS + 5
    fake_provider.script(*({"text": f"answer {i}"} for i in range(count)))
    client = await session("emacs", init_options=provider_options(fake_provider))
    results = []
    for start in range(0, count, 15):  # a few at a time: the status must not depend on order
        batch = [client.command("lich.ask", {"prompt": f"q{i}"}) for i in range(start, min(count, start + 15))]
        results += await asyncio.wait_for(asyncio.gather(*batch), WAIT_S * 3)
    assert all(r["stopped_reason"] == "final" for r in results)
    status = await client.command("lich.status", {})
    tasks = status["tasks"]
    assert len(tasks) == MAX_FINISHED_TASKS
    assert all(t["state"] == "done" for t in tasks)
    kept = {t["task_id"] for t in tasks}
    assert len(kept) == MAX_FINISHED_TASKS
    # The oldest went first: the last one to finish is kept.
    assert results[-1]["task_id"] in kept


async def test_apply_patch_accepts_every_header_the_grammar_accepts(session, root: Path) -> None:
    (root / "a.py").write_text("one = 1\n", encoding="utf-8")
    (root / "b.py").write_text("two = 2\n", encoding="utf-8")
    client = await session("visual-studio-code")
    (hash_a,) = line_hashes(["one = 1"])
    (hash_b,) = line_hashes(["two = 2"])
    patch = f"@@ a.py @@\n= 1:{hash_a}..1:{hash_a}\n~one = 10\n@@b.py\n= 1:{hash_b}..1:{hash_b}\n~two = 20\n"
    result = await client.command("lich.applyPatch", {"patch": patch})
    assert result["ok"] is True, result
    assert (root / "a.py").read_text(encoding="utf-8") == "one = 10\n"
    assert (root / "b.py").read_text(encoding="utf-8") == "two = 20\n"


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
        + b"Content-Length: 99999999999\r\n\r\n" + b'{"huge": "' + b"h" * 5000 + b'"}'
        + other
        + b"Content-Type: " + b"t" * 10_000 + b"\r\n"  # an endless header line
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
        sys.executable, "-m", "lich_lsp", "--tcp", "--port", str(port), "--log-level", "ERROR",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
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
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"processId": None, "rootUri": uri_of(root), "capabilities": {}}}
        writer.write(_frame(init))
        writer.write(b"Content-Length: 99999999999\r\n\r\n")
        writer.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        status = {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
                  "params": {"command": "lich.status", "arguments": [{}]}}
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
        sys.executable, "-m", "lich_lsp", "--ws", "--port", str(port), "--log-level", "ERROR",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
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
                {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"processId": None, "rootUri": uri_of(root), "capabilities": {}}},
                {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                    "uri": uri_of(root / "big.py"), "languageId": "python", "version": 1, "text": big}}},
                {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
                 "params": {"command": "lich.status", "arguments": [{}]}},
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
    from lich_lsp.tasks import clip_event, clip_text

    assert clip_text("short", 1000) == "short"
    for text in ("a" * 200_000, "é" * 200_000, "😀" * 50_000, "a" * 30_000 + "😀" * 30_000):
        clipped = clip_text(text, 65_536)
        assert _wire_size(clipped) <= 65_536
        marker = CUT_MARKER.search(clipped)
        assert marker is not None
        assert len(clipped) - len(marker.group(0)) + int(marker.group(1)) == len(text)
    # Characters dropped earlier are counted in the marker too.
    assert clip_text("abc", 1000, already_cut=7) == "abc… [cut 7 chars]"
    event = {"type": "tool_call_start", "seq": 3, "data": {"name": "write_file", "arguments": {"content": "z" * 500_000}}}
    clipped_event = clip_event(event)
    assert _wire_size(clipped_event) <= MAX_EDITOR_MESSAGE_BYTES
    assert clipped_event["data"]["name"] == "write_file"
    assert "… [cut " in clipped_event["data"]["arguments"]["content"]
    many = {"type": "tool_call_end", "seq": 4, "data": {"name": "x", "rows": ["r"] * 100_000}}
    clipped_many = clip_event(many)
    assert _wire_size(clipped_many) <= MAX_EDITOR_MESSAGE_BYTES
    assert clipped_many["data"]["name"] == "x" and "was cut" in clipped_many["data"]["cut"]
