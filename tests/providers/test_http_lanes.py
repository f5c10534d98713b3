"""The pooled clients' connections, through the completion lane (httpx's own transport, as every
lane): keep-alive, a stream left early closes its socket, stale connections are not reused,
bytes after a response's end never become the next answer, failures as classified errors, and
one construction path for both lanes (HTTP/2 asked for only when `h2` is installed).

The server is an asyncio server in the test's own loop, scripted per request, that records the
connections it accepted and every request it read (head and body), and when each connection
was closed by the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from lich_core.completion.model import FimRequest
from lich_core.completion.providers import CompletionsWire, HttpFimModel
from lich_core.providers import http
from lich_core.providers.base import ProviderError
from lich_core.providers.http import aclose_client, get_client
from lich_core.vocabulary import CancelToken
from tests.support.certificates import make_certificates

pytestmark = pytest.mark.timeout(30)


@dataclass
class Seen:
    head: bytes
    body: bytes
    connection: int


@dataclass
class ScriptedServer:
    """Answers request N with `script[N](writer)`; records what it saw."""

    script: list[Callable[[asyncio.StreamWriter], object]]
    requests: list[Seen] = field(default_factory=list)
    connections: int = 0
    hung_up: list[asyncio.Event] = field(default_factory=list)
    closed: list[asyncio.Event] = field(default_factory=list)  # per connection, its socket closed
    handlers: dict[asyncio.Task[None], asyncio.StreamWriter] = field(default_factory=dict)
    server: asyncio.Server | None = None
    port: int = 0

    async def start(self, tls: ssl.SSLContext | None = None) -> ScriptedServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        """No new connections; the open ones closed and their handlers finished."""
        assert self.server is not None
        self.server.close()
        for writer in self.handlers.values():
            writer.close()
        await asyncio.gather(*self.handlers)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = self.connections
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self.handlers[task] = writer
        hung_up = asyncio.Event()
        self.hung_up.append(hung_up)
        closed = asyncio.Event()
        self.closed.append(closed)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = await _read_body(reader, head)
                self.requests.append(Seen(head, body, number))
                answer = self.script[len(self.requests) - 1](writer)
                if asyncio.iscoroutine(answer):
                    await answer
                if writer.is_closing():
                    return
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            hung_up.set()  # the client closed its side
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()
            closed.set()


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> bytes:
    for line in head.lower().split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return await reader.readexactly(int(line.split(b":")[1]))
    return b""


def sse(text: str) -> bytes:
    events = f"data: {json.dumps({'choices': [{'text': text}]})}\n\ndata: [DONE]\n\n".encode()
    head = f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(events)}"
    return head.encode() + b"\r\n\r\n" + events


def answer(text: str) -> Callable[[asyncio.StreamWriter], None]:
    def write(writer: asyncio.StreamWriter) -> None:
        writer.write(sse(text))

    return write


def answer_then_close(writer: asyncio.StreamWriter) -> None:
    answer("bye")(writer)
    writer.close()  # no `connection: close`: the client learns it when it next uses it


def close_without_answer(writer: asyncio.StreamWriter) -> None:
    writer.close()


def first_chunk_only(writer: asyncio.StreamWriter) -> None:
    """A stream that has sent one piece; the server then reads on, so it sees the hang-up."""
    event = b'data: {"choices": [{"text": "first"}]}\n\n'
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + b"%x\r\n%s\r\n" % (len(event), event)
    )


def model_for(url: str) -> HttpFimModel:
    return HttpFimModel(CompletionsWire(base_url=url + "/v1", name="completion", model="m"))


async def complete(model: HttpFimModel, on_sent: Callable[[], None] | None = None) -> str:
    stream = model.stream(FimRequest(prefix="return ", suffix=""), CancelToken(), on_sent)
    return "".join([piece async for piece in stream])


@pytest.fixture
async def closing_clients() -> Any:
    yield
    await aclose_client()


async def test_keep_alive_carries_every_completion_on_one_connection(closing_clients) -> None:
    server = await ScriptedServer([answer("one"), answer("two"), answer("three")]).start()
    model = model_for(server.url())
    sent: list[int] = []
    try:
        answers = [await complete(model, lambda: sent.append(len(server.requests))) for _ in "abc"]
    finally:
        await server.stop()
    assert answers == ["one", "two", "three"]
    assert server.connections == 1
    assert len(sent) == 3  # on_sent: once per request, as it goes out
    head = server.requests[0].head.decode().lower()
    assert head.startswith("post /v1/completions http/1.1\r\n")
    assert "accept-encoding: gzip, deflate\r\n" in head
    assert json.loads(server.requests[0].body)["prompt"] == "return "


async def test_a_stream_left_early_closes_its_socket(closing_clients) -> None:
    # What a superseded completion does: the caller leaves the iteration after a piece.
    server = await ScriptedServer([first_chunk_only, answer("next")]).start()
    model = model_for(server.url())
    try:
        stream = model.stream(FimRequest(prefix="", suffix=""), CancelToken())
        assert await anext(stream) == "first"
        await stream.aclose()  # type: ignore[attr-defined]
        await asyncio.wait_for(server.hung_up[0].wait(), 10)  # the server saw the socket close
        assert await complete(model) == "next"
    finally:
        await server.stop()
    assert server.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced(closing_clients) -> None:
    server = await ScriptedServer([answer_then_close, answer("fresh")]).start()
    model = model_for(server.url())
    try:
        assert await complete(model) == "bye"
        await asyncio.wait_for(server.closed[0].wait(), 10)  # closed before the next request
        assert await complete(model) == "fresh"
    finally:
        await server.stop()
    assert [seen.connection for seen in server.requests] == [0, 1]


async def test_bytes_after_the_declared_length_close_the_connection(closing_clients) -> None:
    # httpcore reads them into its parser with the answer's end; they must not be the next one.
    def answer_and_more(writer: asyncio.StreamWriter) -> None:
        writer.write(sse("first") + sse("stale"))  # in one write: more than the length declared

    server = await ScriptedServer([answer_and_more, answer("fresh")]).start()
    model = model_for(server.url())
    try:
        assert await complete(model) == "first"
        assert await complete(model) == "fresh"
    finally:
        await server.stop()
    assert [seen.connection for seen in server.requests] == [0, 1]


async def test_bytes_sent_on_an_idle_connection_never_become_the_next_answer(
    closing_clients,
) -> None:
    idle = asyncio.Event()
    sent = asyncio.Event()

    async def answer_then_more_later(writer: asyncio.StreamWriter) -> None:
        answer("first")(writer)
        await idle.wait()
        writer.write(sse("stale"))
        await writer.drain()
        sent.set()

    server = await ScriptedServer([answer_then_more_later, answer("fresh")]).start()
    model = model_for(server.url())
    try:
        assert await complete(model) == "first"
        idle.set()  # the answer was read whole: its connection waits in the pool
        await asyncio.wait_for(sent.wait(), 10)
        assert await complete(model) == "fresh"
    finally:
        await server.stop()
    assert [seen.connection for seen in server.requests] == [0, 1]


async def test_connection_close_in_the_answer_is_honoured(closing_clients) -> None:
    def closing(writer: asyncio.StreamWriter) -> None:
        writer.write(sse("one").replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n", 1))

    server = await ScriptedServer([closing, answer("two")]).start()
    model = model_for(server.url())
    try:
        assert [await complete(model), await complete(model)] == ["one", "two"]
    finally:
        await server.stop()
    assert server.connections == 2


async def test_no_answer_is_a_dropped_connection(closing_clients) -> None:
    server = await ScriptedServer([close_without_answer, answer("unused")]).start()
    try:
        with pytest.raises(ProviderError) as caught:
            await complete(model_for(server.url()))
    finally:
        await server.stop()
    assert len(server.requests) == 1  # not sent again
    assert caught.value.kind == "network"
    assert "connection dropped mid-response" in str(caught.value)


async def test_a_refused_connection_says_so_with_the_hint(closing_clients) -> None:
    server = await ScriptedServer([]).start()
    url = server.url()
    await server.stop()
    model = HttpFimModel(
        CompletionsWire(base_url=url + "/v1", name="completion", model="m", connect_hint="HINT")
    )
    with pytest.raises(ProviderError) as caught:
        await complete(model)
    assert "refused the connection" in str(caught.value) and "HINT" in str(caught.value)


async def test_tls_is_verified_against_the_clients_roots(tmp_path: Path, closing_clients) -> None:
    _authority, certificate, key = make_certificates(tmp_path, "localhost")
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(certificate, key)
    server = await ScriptedServer([answer("secret")]).start(tls=served)
    try:
        with pytest.raises(ProviderError) as caught:
            await complete(model_for(f"https://localhost:{server.port}"))
    finally:
        await server.stop()
    assert "TLS handshake" in str(caught.value)
    assert server.requests == []


async def test_an_error_status_reaches_the_completion_model(closing_clients) -> None:
    def not_found(writer: asyncio.StreamWriter) -> None:
        body = b'{"error": {"message": "no such model"}}'
        head = f"HTTP/1.1 404 Not Found\r\ncontent-length: {len(body)}\r\n\r\n"
        writer.write(head.encode() + body)

    server = await ScriptedServer([not_found]).start()
    try:
        with pytest.raises(ProviderError) as caught:
            await complete(model_for(server.url()))
    finally:
        await server.stop()
    assert "no such model" in str(caught.value)


@pytest.mark.parametrize("installed", [True, False])
async def test_both_lanes_are_built_alike_with_http2_only_when_h2_is_installed(
    monkeypatch: pytest.MonkeyPatch, installed: bool, closing_clients
) -> None:
    built: list[dict[str, Any]] = []
    real = httpx.AsyncClient

    def recording(**kwargs: Any) -> httpx.AsyncClient:
        built.append(kwargs)
        return real(**{**kwargs, "http2": False})  # h2 itself need not be installed here

    monkeypatch.setattr(http, "http2_available", lambda: installed)
    monkeypatch.setattr(httpx, "AsyncClient", recording)
    await aclose_client()
    chat, completion = get_client("chat"), get_client("completion")
    assert chat is not completion  # completions never wait for a chat's connection
    assert len(built) == 2 and built[0] == built[1]
    assert built[0]["http2"] is installed and "transport" not in built[0]
    assert built[0]["trust_env"] is False


async def test_plain_http_is_http_1_1_whatever_is_installed(closing_clients) -> None:
    server = await ScriptedServer([answer("x")]).start()
    try:
        response = await get_client("completion").post(server.url() + "/", content=b"{}")
    finally:
        await server.stop()
    assert response.http_version == "HTTP/1.1"
