"""A hostile completion server cannot stall the editor: a real `python -m lich_lsp` over stdio,
its completion model pointed at a loopback asyncio server in this test, scripted per case.

After one well-behaved answer (the first completion also builds the model and its HTTP client,
which a loaded machine may take longer than the test's short timeout for), an attack answers the
next two completion requests; later requests get a well-behaved answer again. While it runs: the inline completion answers, empty, within the configured `timeout_ms`;
a `$/cancelRequest` for another pending completion is answered; a `textDocument/codeAction` is
answered; and afterwards a normal completion works. The gzip bomb ends as `response_too_large:`
(the server's log line). Bytes after a declared Content-Length never become the next answer. The
timing targets (cancel within 100 ms, code actions' p99 under 50 ms) are measured by
`python -m bench hostile`, not asserted here.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import WAIT_S, EditorClient, bounded, start_session, stop_session
from lsprotocol import types
from pygls.exceptions import JsonRpcException

pytestmark = [
    pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"),
    pytest.mark.timeout(90),
]

TIMEOUT_MS = 500
DRIP_S = 0.05  # a dripping server sends its next few bytes this often
BOMB_MIB = 64  # newlines: a thousandfold expansion, that blocked the server's loop for a minute
SOURCE = "value = \n"
Attack = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def sse_answer(text: str) -> bytes:
    body = f"data: {json.dumps({'choices': [{'text': text}]})}\n\ndata: [DONE]\n\n".encode()
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def until_hung_up(reader: asyncio.StreamReader) -> None:
    """Held open, sending nothing, until the client closes the connection."""
    while await reader.read(65536):
        pass


@functools.cache
def newline_bomb() -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip
    mib = b"\n" * (1 << 20)
    return b"".join(packer.compress(mib) for _ in range(BOMB_MIB)) + packer.flush()


async def gzip_bomb(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    bomb = newline_bomb()
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
        b"content-length: %d\r\n\r\n" % len(bomb) + bomb
    )
    await writer.drain()
    await until_hung_up(reader)


async def headers_dripped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The status line, then one header line now and then: never the end of the head."""
    writer.write(b"HTTP/1.1 200 OK\r\n")
    while True:
        writer.write(b"x-wait: still\r\n")
        await writer.drain()
        await asyncio.sleep(DRIP_S)


async def headers_never_sent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await until_hung_up(reader)


async def body_dripped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The head of a stream, then one space of text now and then: progress, but no end."""
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    event = b'data: {"choices": [{"text": " "}]}\n\n'
    while True:
        writer.write(b"%x\r\n%s\r\n" % (len(event), event))
        await writer.drain()
        await asyncio.sleep(DRIP_S)


async def body_stalled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 4096\r\n\r\n"
        b'data: {"choices": [{"te'
    )
    await writer.drain()
    await until_hung_up(reader)


async def length_larger_then_close(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    body = b'data: {"choices": [{"text": "cut"}]}\n\n'
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
        % (len(body) + 500, body)
    )
    await writer.drain()
    writer.close()


async def blank_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A stream's head, then blank lines only, forever: no event, no progress, no end."""
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
    while True:
        writer.write(b"\n" * 64)
        await writer.drain()
        await asyncio.sleep(DRIP_S)


class HostileServer:
    """Answers request N with `attacks[N]` (None: well-behaved), and every later one with a
    well-behaved stream of `normal_text`; records each request's JSON body and the connection
    it came on."""

    def __init__(self, attacks: list[Attack | None], normal_text: str = "fresh") -> None:
        self.attacks = attacks
        self.normal_text = normal_text
        self.requests: list[dict[str, Any]] = []
        self.connections: list[int] = []  # per request, the number of its connection
        self._accepted = 0
        self._changed = asyncio.Condition()
        self._handlers: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.url = ""

    async def start(self) -> HostileServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._handlers:
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    async def wait_for_requests(self, count: int) -> None:
        async with self._changed:
            await bounded(
                self._changed.wait_for(lambda: len(self.requests) >= count),
                WAIT_S,
                f"{count} requests at the completion server",
            )

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        number = self._accepted
        self._accepted += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                )
                body = await reader.readexactly(length)
                index = len(self.requests)
                async with self._changed:
                    self.requests.append(json.loads(body))
                    self.connections.append(number)
                    self._changed.notify_all()
                attack = self.attacks[index] if index < len(self.attacks) else None
                if attack is not None:
                    await attack(reader, writer)
                else:
                    writer.write(sse_answer(self.normal_text))
                    await writer.drain()
                if writer.is_closing():
                    return
        except (asyncio.IncompleteReadError, ConnectionError, StopIteration):
            pass  # the client hung up
        except asyncio.CancelledError:
            pass  # stop(): the test is over
        finally:
            writer.close()
            self._handlers.discard(task)


def completion_options(server: HostileServer, **entry: Any) -> dict[str, Any]:
    return {
        "completion": {
            "kind": "openai_compat",
            "format": "completions",
            "base_url": server.url,
            "model": "fim",
            **entry,
        },
        "completion_debounce_ms": 0,
    }


def inline_params(uri: str, character: int = len("value = ")) -> types.InlineCompletionParams:
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=0, character=character),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Automatic
        ),
    )


def send_inline(client: EditorClient, uri: str, msg_id: str) -> asyncio.Future[Any]:
    return asyncio.ensure_future(
        client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(uri), msg_id=msg_id
        )
    )


async def inline_text(client: EditorClient, uri: str, character: int) -> str:
    result = await bounded(
        client.text_document_inline_completion_async(inline_params(uri, character)),
        WAIT_S,
        "an inline completion",
    )
    items = list(result.items) if result is not None else []
    return items[0].insert_text if items else ""


async def code_action(client: EditorClient, uri: str) -> list[Any]:
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=5)
        ),
        context=types.CodeActionContext(diagnostics=[]),
    )
    result = await bounded(
        client.text_document_code_action_async(params), WAIT_S, "a code action answer"
    )
    return list(result or [])


def items_of(result: Any) -> list[Any]:
    if result is None:
        return []
    return list(result.items if isinstance(result, types.InlineCompletionList) else result)


@contextlib.asynccontextmanager
async def hostile_session(root: Path, server: HostileServer, **entry: Any):  # type: ignore[no-untyped-def]
    await server.start()
    client = await start_session(
        root,
        "visual-studio-code",
        init_options=completion_options(server, **entry),
        inline_completion=True,
    )
    try:
        yield client
    finally:
        await stop_session(client)
        await server.stop()
    assert not client.failures, client.failures


ATTACKS = {
    "gzip_bomb": gzip_bomb,
    "headers_never_sent": headers_never_sent,
    "headers_dripped": headers_dripped,
    "body_stalled": body_stalled,
    "body_dripped": body_dripped,
    "content_length_larger_then_close": length_larger_then_close,
    "blank_answer": blank_answer,
}


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_a_hostile_completion_server_cannot_stall_the_editor(root: Path, attack: str) -> None:
    newline_bomb()  # made before the clock runs (compressing 64 MiB takes a while)
    server = HostileServer([None, ATTACKS[attack], ATTACKS[attack]])
    async with hostile_session(root, server, timeout_ms=TIMEOUT_MS) as client:
        first = client.open(root / "first.py", SOURCE)
        second = client.open(root / "second.py", SOURCE)
        warm = client.open(root / "warm.py", "warm = \n")
        assert await inline_text(client, warm, len("warm = ")) == "fresh"

        pending = send_inline(client, first, "attacked")
        await server.wait_for_requests(2)
        # While the attack runs, the editor's other requests are answered.
        assert await code_action(client, first) is not None
        cancelled = send_inline(client, second, "to-cancel")
        await server.wait_for_requests(3)
        client.protocol.notify("$/cancelRequest", types.CancelParams(id="to-cancel"))
        with contextlib.suppress(JsonRpcException):  # cancelled, or ended empty before
            assert items_of(await bounded(cancelled, WAIT_S, "the cancelled request")) == []

        # The attacked request answers, empty: its deadline ended it (the time it takes is the
        # bench's to measure, `python -m bench hostile`; a test only bounds the wait).
        result = await bounded(pending, TIMEOUT_MS / 1000 + WAIT_S, "the attacked completion")
        assert items_of(result) == []
        if attack == "gzip_bomb":
            await client.wait_for_log("completion failed: response_too_large:")

        # The server is still usable: the next completion gets the well-behaved answer.
        client.type_text(first, "value = 1\n")
        assert await inline_text(client, first, len("value = 1")) == "fresh"


async def test_bytes_after_the_declared_length_never_become_the_next_answer(root: Path) -> None:
    async def answer_with_extra_bytes(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        # A whole answer, then (in the same write) what looks like the answer to the next
        # request on this connection.
        writer.write(sse_answer("first") + sse_answer("stale"))
        await writer.drain()

    server = HostileServer([None, answer_with_extra_bytes])
    async with hostile_session(root, server, timeout_ms=TIMEOUT_MS) as client:
        uri = client.open(root / "extra.py", SOURCE)
        assert await inline_text(client, uri, len("value = ")) == "fresh"
        client.type_text(uri, "value = 1\n")
        assert await inline_text(client, uri, len("value = 1")) == "first"
        client.type_text(uri, "value = 2\n")
        assert await inline_text(client, uri, len("value = 2")) == "fresh"
        # The connection was kept after a clean answer; the one the stray bytes came on was
        # closed, not used again.
        assert server.connections == [0, 0, 1]


async def test_the_default_completion_timeout_is_five_seconds(root: Path) -> None:
    server = HostileServer([None, headers_never_sent])
    async with hostile_session(root, server) as client:  # no timeout_ms
        warm = client.open(root / "warm.py", "warm = \n")
        assert await inline_text(client, warm, len("warm = ")) == "fresh"
        uri = client.open(root / "slow.py", SOURCE)
        sent_at = time.monotonic()
        assert (
            await bounded(inline_text(client, uri, len("value = ")), 5 + WAIT_S, "the completion")
            == ""
        )
        # Not sooner than the default (load can only make it later; the bound above is the wait).
        assert time.monotonic() - sent_at >= 4.9
        await client.wait_for_log("completion failed:")
        assert any("within 5 s" in m.message for m in client.log_messages)
