"""WorkspaceEdit shape as pure functions (minimal edits, codecs, the review overlay); the wire's own:
the negotiated position encoding, exit and shutdown, the TCP and WebSocket transports.

The edits a session sends (each encoding, CreateFile, the disk-write policy, rollback of a
rejected edit) are tested in-process in test_session_edits.py.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest
from lsp_harness import SERVER_COMMAND, units, uri_of
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

import lich_lsp.edits as edits_module
from lich_core.hashline.replacements import apply_replacements, line_replacements
from lich_core.workspace import FileChange, LineReplacement
from lich_lsp.edits import (
    ClientFeatures,
    EditEntry,
    build_workspace_edit,
    count_hunks,
    text_edits,
)
from lich_lsp.workspace import EditorWorkspace

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

NON_ASCII = "naïve 😀 日本 café"
# Generous: a loaded two-core CI machine may take seconds to start a Python process.
EXIT_WAIT_S = 30


async def test_the_negotiated_position_encoding_is_the_one_edits_use(session, root: Path) -> None:
    """On the wire: the encoding the server announces in its InitializeResult (pygls' negotiation)
    is the one its edits count in. Each encoding's positions are tested in-process
    (test_session_edits.py)."""
    # A lone "\r" is a line break for LSP but not for hashline; the last line has no newline.
    text = f"{NON_ASCII}\nmid\rdle 😀\nlast {NON_ASCII} end"
    (root / "u.txt").write_text(text, encoding="utf-8")
    client = await session("visual-studio-code", encodings=["utf-8"])
    assert client.encoding == "utf-8"
    uri = client.open(root / "u.txt", text)
    result = await client.command(
        "lich.runTool",
        {
            "name": "edit_file",
            "args": {"path": "u.txt", "old_string": "end", "new_string": "fin ✓"},
        },
    )
    assert result["ok"] is True, result
    expected = f"{NON_ASCII}\nmid\rdle 😀\nlast {NON_ASCII} fin ✓"
    assert client.text(uri) == expected
    read = await client.command("lich.read", {"uri": uri})
    assert read["rows"].endswith(f"|last {NON_ASCII} fin ✓")
    (applied,) = client.editor.applied
    (only,) = applied.edit.document_changes[0].edits
    assert only.range.start == types.Position(line=3, character=0)  # LSP counts the "\r" break
    # The end of the last line, counted in UTF-8 bytes (UTF-16 would give a different column).
    assert only.range.end == types.Position(
        line=3, character=units(f"last {NON_ASCII} end", "utf-8")
    )


def test_one_line_change_in_a_big_file_is_a_one_line_edit() -> None:
    old = "".join(f"line {i}\n" for i in range(10_000))
    new = old.replace("line 5000\n", "line five thousand\n")
    change = FileChange.write(Path("/w/big.txt"), new, old)
    edit = build_workspace_edit(
        [EditEntry("file:///w/big.txt", change, 3)],
        ClientFeatures(document_changes=True),
        PositionCodec("utf-16"),
    )
    (doc_edit,) = edit.document_changes
    (text_edit,) = doc_edit.edits
    assert doc_edit.text_document.version == 3
    assert (text_edit.range.start.line, text_edit.range.end.line, text_edit.new_text) == (
        5000,
        5001,
        "line five thousand\n",
    )


def test_edits_module_never_diffs() -> None:
    """lich_lsp/edits.py sends the replacements it is given: no difflib, no diff helper."""
    tree = ast.parse(inspect.getsource(edits_module))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported.update(alias.name for alias in node.names)
    assert "difflib" not in imported
    assert (
        not {"line_replacements", "lich_core.hashline.replacements", "SequenceMatcher"} & imported
    )
    names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert not {name for name in names if "diff" in name}


def test_workspace_edit_sends_the_changes_replacements_as_given() -> None:
    # Deliberately not minimal: a re-diff would shrink it to one line; the edit must not.
    old, new = "a\nb\nc\n", "a\nB\nc\n"
    change = FileChange(Path("/w/f.txt"), "write", new, old, (LineReplacement(0, 3, new),))
    edit = build_workspace_edit(
        [EditEntry("file:///w/f.txt", change, 1)], ClientFeatures(), PositionCodec("utf-16")
    )
    (only,) = edit.changes["file:///w/f.txt"]
    assert (only.range.start.line, only.range.end.line, only.new_text) == (0, 3, new)
    assert count_hunks([change]) == 1


class _Store:
    """The part of DocumentStore the review overlay reads: current texts, no editor."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts

    def current_text(self, path: Path) -> str | None:
        return self.texts.get(str(path))

    @contextlib.asynccontextmanager
    async def locked(self, paths: Iterable[Path]) -> AsyncIterator[None]:
        yield


def _review_workspace(texts: dict[str, str]) -> EditorWorkspace:
    from types import SimpleNamespace

    parts = SimpleNamespace(documents=_Store(texts), root=Path("/w"))
    return EditorWorkspace(parts, mode="review")  # type: ignore[arg-type]


async def test_review_keeps_the_engines_replacements_and_composes_from_the_base() -> None:
    base = "".join(f"line {i}\n" for i in range(100))
    path = Path("/w/r.txt")
    ws = _review_workspace({str(path): base})
    # One change: the tool's own replacements go out untouched (here deliberately not minimal).
    first = base.replace("line 10\n", "line ten\n")
    tools_own = (LineReplacement(9, 12, "line 9\nline ten\nline 11\n"),)
    await ws.apply([FileChange(path, "write", first, base, tools_own)], "t")
    (pending,) = ws.pending_changes()
    assert pending.replacements == tools_own
    # A second change to the same file: recomputed once from the task's base to the final text.
    final = first.replace("line 90\n", "line ninety\n")
    await ws.apply([FileChange.write(path, final, first)], "t")
    (pending,) = ws.pending_changes()
    assert (pending.base_text, pending.new_text) == (base, final)
    assert pending.replacements == line_replacements(base, final)
    assert pending.replacements == (
        LineReplacement(10, 11, "line ten\n"),
        LineReplacement(90, 91, "line ninety\n"),
    )
    assert apply_replacements(base, pending.replacements) == final


async def test_review_new_file_then_edit_is_one_whole_text_replacement_and_delete_has_none() -> (
    None
):
    made, gone = Path("/w/new.txt"), Path("/w/gone.txt")
    ws = _review_workspace({str(gone): "bye\n"})
    await ws.apply([FileChange.write(made, "one\n", None)], "t")
    await ws.apply(
        [FileChange.write(made, "one\ntwo\n", "one\n"), FileChange.delete(gone, "bye\n")], "t"
    )
    by_path = {c.path: c for c in ws.pending_changes()}
    assert by_path[made].replacements == (LineReplacement(0, 0, "one\ntwo\n"),)
    assert (by_path[gone].kind, by_path[gone].replacements) == ("delete", ())


def test_text_edits_use_the_codec_for_a_last_line_without_newline() -> None:
    base = "é😀"
    replacement = [LineReplacement(0, 1, "x")]
    assert text_edits(base, replacement, PositionCodec("utf-8"))[0].range.end.character == 6
    assert text_edits(base, replacement, PositionCodec("utf-16"))[0].range.end.character == 3
    assert text_edits(base, replacement, PositionCodec("utf-32"))[0].range.end.character == 2


def _frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _initialize(root: Path, process_id: int) -> bytes:
    return _frame(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": process_id, "rootUri": uri_of(root), "capabilities": {}},
        }
    )


async def test_exit_after_shutdown_is_clean(root: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None
    proc.stdin.write(_initialize(root, os.getpid()))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
    await proc.stdin.drain()
    # stdin stays open: the server must leave on `exit` alone.
    assert await asyncio.wait_for(proc.wait(), EXIT_WAIT_S) == 0
    proc.stdin.close()


async def _read_frame(stream: asyncio.StreamReader) -> dict:
    length = 0
    while True:
        line = await stream.readline()
        if not line:
            raise EOFError("the server closed its output")
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        elif line == b"\r\n" and length:
            return json.loads(await stream.readexactly(length))


async def _response(stream: asyncio.StreamReader, msg_id: int) -> dict:
    while True:
        message = await _read_frame(stream)
        if message.get("id") == msg_id and "method" not in message:
            return message


async def test_shutdown_while_a_task_runs_cancels_it_and_exits(root: Path, fake_provider) -> None:
    fake_provider.script({"text": "never finishes", "delay_s": 30})
    options = {
        "providers": [
            {
                "name": "fake",
                "kind": "openai_compat",
                "base_url": fake_provider.url + "/v1",
                "model": "m",
            }
        ]
    }
    proc = await asyncio.create_subprocess_exec(
        *SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        init = json.loads(_initialize(root, os.getpid()).split(b"\r\n\r\n", 1)[1])
        init["params"]["initializationOptions"] = options
        proc.stdin.write(_frame(init))
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        ask = {"command": "lich.ask", "arguments": [{"prompt": "slow"}]}
        proc.stdin.write(
            _frame({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": ask})
        )
        await proc.stdin.drain()
        await asyncio.wait_for(_response(proc.stdout, 1), EXIT_WAIT_S)
        assert await asyncio.to_thread(fake_provider.wait_for_requests, 1, EXIT_WAIT_S)
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
        await proc.stdin.drain()
        # The task ends as cancelled and answers its request before shutdown is answered.
        answered = await asyncio.wait_for(_response(proc.stdout, 2), EXIT_WAIT_S)
        assert answered["result"]["stopped_reason"] == "aborted"
        assert (await asyncio.wait_for(_response(proc.stdout, 3), EXIT_WAIT_S))["result"] is None
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
        await proc.stdin.drain()
        assert await asyncio.wait_for(proc.wait(), EXIT_WAIT_S) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_exit_when_the_client_process_dies(root: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc = await asyncio.create_subprocess_exec(
        *SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_initialize(root, parent.pid))
        await proc.stdin.drain()
        assert b"Content-Length" in await asyncio.wait_for(proc.stdout.readline(), EXIT_WAIT_S)
        parent.kill()
        parent.wait()
        # stdin stays open: only the parent watch can notice.
        assert await asyncio.wait_for(proc.wait(), EXIT_WAIT_S) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
        parent.kill()


async def test_end_of_input_exits(root: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None
    proc.stdin.write(_initialize(root, os.getpid()))
    await proc.stdin.drain()
    proc.stdin.close()
    assert await asyncio.wait_for(proc.wait(), EXIT_WAIT_S) == 1  # no shutdown was asked for


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_tcp_transport(root: Path) -> None:
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        *SERVER_COMMAND,
        "--tcp",
        "--port",
        str(port),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = asyncio.get_running_loop().time() + EXIT_WAIT_S
        while True:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                assert asyncio.get_running_loop().time() < deadline, "lich-lsp --tcp never listened"
                await asyncio.sleep(0.05)
        writer.write(_initialize(root, os.getpid()))
        answer = await asyncio.wait_for(_response(reader, 1), EXIT_WAIT_S)
        assert "lich.ask" in answer["result"]["capabilities"]["executeCommandProvider"]["commands"]
        writer.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        await asyncio.wait_for(_response(reader, 2), EXIT_WAIT_S)
        writer.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
        await writer.drain()
        assert await asyncio.wait_for(proc.wait(), EXIT_WAIT_S) == 0
        writer.close()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_ws_without_websockets_is_one_clear_line() -> None:
    import importlib.util

    if importlib.util.find_spec("websockets") is not None:
        pytest.skip("websockets is installed here")
    done = subprocess.run(
        [*SERVER_COMMAND, "--ws"], capture_output=True, text=True, timeout=EXIT_WAIT_S, check=False
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "lich-lsp: --ws needs the websockets package: pip install 'pygls[ws]'"
    )


async def test_ws_transport(root: Path) -> None:
    """`lich-lsp --ws`: one JSON-RPC message per WebSocket frame (no Content-Length headers)."""
    websockets = pytest.importorskip(
        "websockets", reason="pip install 'pygls[ws]' for the --ws transport"
    )
    import json as json_module

    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        *SERVER_COMMAND,
        "--ws",
        "--port",
        str(port),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = asyncio.get_running_loop().time() + EXIT_WAIT_S
        while True:
            try:
                connection = await websockets.connect(f"ws://127.0.0.1:{port}")
                break
            except OSError:
                assert asyncio.get_running_loop().time() < deadline, "lich-lsp --ws never listened"
                await asyncio.sleep(0.05)
        initialize = json_module.loads(_initialize(root, os.getpid()).split(b"\r\n\r\n", 1)[1])
        await connection.send(json_module.dumps(initialize))
        while True:
            answer = json_module.loads(await asyncio.wait_for(connection.recv(), EXIT_WAIT_S))
            if answer.get("id") == 1:
                break
        assert "lich.ask" in answer["result"]["capabilities"]["executeCommandProvider"]["commands"]
        await connection.close()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
