"""StreamTransport, the completion client's HTTP/1.1 transport: keep-alive, bodies both ways,
early close, stale connections, TLS, and failures as the httpx errors the providers map.

The server is an asyncio server in the test's own loop, scripted per request, that records the
connections it accepted and every request it read (head and body), and when each connection
was closed by the client.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from lich_core.completion.model import FimRequest
from lich_core.completion.providers import CompletionsWire, HttpFimModel
from lich_core.providers.base import ProviderError
from lich_core.providers.errors import error_from_exception
from lich_core.providers.http import aclose_client, get_client
from lich_core.providers.transport import StreamTransport
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
        except (asyncio.IncompleteReadError, ConnectionError):
            hung_up.set()  # the client closed its side
        finally:
            writer.close()


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> bytes:
    headers = head.lower()
    if b"transfer-encoding: chunked" in headers:
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return body
            body += chunk[:-2]
    for line in headers.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return await reader.readexactly(int(line.split(b":")[1]))
    return b""


def ok(body: bytes = b"hello", *, extra: str = "") -> Callable[[asyncio.StreamWriter], None]:
    def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(
            f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode() + body
        )

    return answer


def ok_then_close(writer: asyncio.StreamWriter) -> None:
    ok(b"bye")(writer)
    writer.close()  # no `connection: close`: the client learns it when it next uses it


def close_without_answer(writer: asyncio.StreamWriter) -> None:
    writer.close()


def first_chunk_only(writer: asyncio.StreamWriter) -> None:
    """A stream that has sent one piece; the server then reads on, so it sees the hang-up."""
    writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")


async def client_for(transport: StreamTransport, **timeouts: float) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(10.0, **timeouts))


def plain_transport() -> StreamTransport:
    return StreamTransport(ssl.create_default_context())


async def test_keep_alive_sends_every_request_on_one_connection() -> None:
    server = await ScriptedServer([ok(b"one"), ok(b"two"), ok(b"three")]).start()
    async with await client_for(plain_transport()) as client:
        answers = [
            (await client.post(server.url() + "/v1/completions", content=body)).text
            for body in (b'{"a": 1}', b'{"b": 2}', b'{"c": 3}')
        ]
    await server.stop()
    assert answers == ["one", "two", "three"]
    assert server.connections == 1
    assert [seen.body for seen in server.requests] == [b'{"a": 1}', b'{"b": 2}', b'{"c": 3}']
    first = server.requests[0].head.decode()
    assert first.startswith("POST /v1/completions HTTP/1.1\r\n")
    assert "content-length: 8" in first.lower() and "host: 127.0.0.1" in first.lower()


async def test_chunked_and_gzipped_answers_are_decoded() -> None:
    packed = gzip.compress(b"compressed text")

    def chunked(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
        )

    server = await ScriptedServer([chunked, ok(packed, extra="content-encoding: gzip\r\n")]).start()
    async with await client_for(plain_transport()) as client:
        first = await client.get(server.url() + "/")
        second = await client.get(server.url() + "/")
    await server.stop()
    assert first.text == "abcdefg"
    assert second.text == "compressed text"
    assert server.connections == 1  # a chunked answer read to its end keeps the connection


async def test_a_body_of_unknown_length_is_sent_chunked() -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for piece in (b"pre", b"fix", b"!"):
            yield piece

    server = await ScriptedServer([ok()]).start()
    async with await client_for(plain_transport()) as client:
        response = await client.post(server.url() + "/", content=pieces())
    await server.stop()
    assert response.status_code == 200
    assert b"transfer-encoding: chunked" in server.requests[0].head.lower()
    assert server.requests[0].body == b"prefix!"


async def test_closing_a_response_early_closes_its_connection() -> None:
    server = await ScriptedServer([first_chunk_only, ok(b"next")]).start()
    async with await client_for(plain_transport()) as client:
        async with client.stream("POST", server.url() + "/", content=b"{}") as response:
            async for piece in response.aiter_raw():
                assert piece == b"first"
                break  # the user typed on: the rest is not wanted
        await server.hung_up[0].wait()  # the server saw the socket closed
        again = await client.post(server.url() + "/", content=b"{}")
    await server.stop()
    assert again.text == "next"
    assert server.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    server = await ScriptedServer([ok_then_close, ok(b"fresh")]).start()
    async with await client_for(plain_transport()) as client:
        assert (await client.post(server.url() + "/", content=b"1")).text == "bye"
        # Whether or not the client has seen the close yet, the request succeeds.
        assert (await client.post(server.url() + "/", content=b"2")).text == "fresh"
    await server.stop()
    assert [seen.body for seen in server.requests] == [b"1", b"2"]
    assert server.connections == 2


STALE_ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nstale"


async def test_bytes_after_the_declared_length_close_the_connection() -> None:
    def answer_and_more(writer: asyncio.StreamWriter) -> None:
        ok(b"first")(writer)
        writer.write(STALE_ANSWER)  # in the same write: more than the length declared

    server = await ScriptedServer([answer_and_more, ok(b"fresh")]).start()
    async with await client_for(plain_transport()) as client:
        assert (await client.post(server.url() + "/", content=b"1")).text == "first"
        assert (await client.post(server.url() + "/", content=b"2")).text == "fresh"
    await server.stop()
    assert [seen.connection for seen in server.requests] == [0, 1]


async def test_bytes_sent_on_an_idle_connection_never_become_the_next_answer() -> None:
    idle = asyncio.Event()
    sent = asyncio.Event()

    async def answer_then_more_later(writer: asyncio.StreamWriter) -> None:
        ok(b"first")(writer)
        await idle.wait()
        writer.write(STALE_ANSWER)
        await writer.drain()
        sent.set()

    server = await ScriptedServer([answer_then_more_later, ok(b"fresh")]).start()
    async with await client_for(plain_transport()) as client:
        assert (await client.post(server.url() + "/", content=b"1")).text == "first"
        idle.set()  # the response was read whole: its connection waits in the pool
        await asyncio.wait_for(sent.wait(), 10)
        assert (await client.post(server.url() + "/", content=b"2")).text == "fresh"
    await server.stop()
    assert [seen.connection for seen in server.requests] == [0, 1]


async def test_a_reused_connection_closed_before_any_answer_is_tried_once_more() -> None:
    # The race the idle check cannot see: the server closes as the request arrives.
    server = await ScriptedServer([ok(), close_without_answer, ok(b"again")]).start()
    async with await client_for(plain_transport()) as client:
        await client.post(server.url() + "/", content=b"1")
        assert (await client.post(server.url() + "/", content=b"2")).text == "again"
    await server.stop()
    assert [(seen.body, seen.connection) for seen in server.requests] == [
        (b"1", 0),
        (b"2", 0),
        (b"2", 1),
    ]


async def test_connection_close_in_the_answer_is_honoured() -> None:
    server = await ScriptedServer([ok(extra="connection: close\r\n"), ok()]).start()
    async with await client_for(plain_transport()) as client:
        await client.get(server.url() + "/")
        await client.get(server.url() + "/")
    await server.stop()
    assert server.connections == 2


async def test_no_answer_on_a_new_connection_is_a_dropped_connection_not_retried() -> None:
    server = await ScriptedServer([close_without_answer, ok()]).start()
    async with await client_for(plain_transport()) as client:
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await client.post(server.url() + "/", content=b"{}")
    await server.stop()
    assert len(server.requests) == 1
    error = error_from_exception(caught.value, provider="completion", url=server.url())
    assert error.kind == "network" and "connection dropped mid-response" in str(error)


async def test_an_answer_cut_after_its_first_bytes_is_not_sent_again() -> None:
    def half_a_head(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\n")
        writer.close()

    server = await ScriptedServer([ok(), half_a_head, ok()]).start()
    async with await client_for(plain_transport()) as client:
        await client.get(server.url() + "/")
        with pytest.raises(httpx.RemoteProtocolError):
            await client.post(server.url() + "/", content=b"once")
    await server.stop()
    assert [seen.body for seen in server.requests] == [b"", b"once"]


async def test_a_refused_connection_says_so() -> None:
    server = await ScriptedServer([]).start()
    url = server.url()
    await server.stop()
    async with await client_for(plain_transport()) as client:
        with pytest.raises(httpx.ConnectError) as caught:
            await client.post(url + "/", content=b"{}")
    error = error_from_exception(caught.value, provider="completion", url=url, connect_hint="HINT")
    assert "refused the connection" in str(error) and "HINT" in str(error)


async def test_a_silent_server_is_a_read_timeout() -> None:
    release = asyncio.Event()

    async def silent(writer: asyncio.StreamWriter) -> None:
        await release.wait()

    server = await ScriptedServer([silent]).start()
    async with await client_for(plain_transport(), read=0.2) as client:
        with pytest.raises(httpx.ReadTimeout) as caught:
            await client.post(server.url() + "/", content=b"{}")
    release.set()
    await server.stop()
    error = error_from_exception(caught.value, provider="completion", url=server.url())
    assert "timed out waiting for the model" in str(error)


async def test_only_http_and_https() -> None:
    async with await client_for(plain_transport()) as client:
        with pytest.raises(httpx.UnsupportedProtocol):
            await client.get("ftp://127.0.0.1/")


async def test_tls_with_the_transports_roots_and_refused_without_them(tmp_path: Path) -> None:
    authority, certificate, key = make_certificates(tmp_path, "localhost")
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(certificate, key)
    trusting = ssl.create_default_context(cafile=str(authority))
    server = await ScriptedServer([ok(b"secret")]).start(tls=served)
    url = f"https://localhost:{server.port}"
    async with await client_for(StreamTransport(trusting)) as client:
        assert (await client.get(url + "/")).text == "secret"
    async with await client_for(plain_transport()) as client:
        with pytest.raises(httpx.ConnectError) as caught:
            await client.get(url + "/")
    await server.stop()
    error = error_from_exception(caught.value, provider="completion", url=url)
    assert "TLS handshake" in str(error)


async def test_closing_the_transport_closes_idle_connections() -> None:
    server = await ScriptedServer([ok()]).start()
    client = await client_for(plain_transport())
    await client.get(server.url() + "/")
    await client.aclose()
    await server.hung_up[0].wait()
    await server.stop()


async def test_completion_models_use_this_transport_and_report_the_request_sent() -> None:
    def sse(writer: asyncio.StreamWriter) -> None:
        events = b'data: {"choices": [{"text": "x + 1"}]}\n\ndata: [DONE]\n\n'
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            + f"content-length: {len(events)}\r\n\r\n".encode()
            + events
        )

    server = await ScriptedServer([sse, sse]).start()
    model = HttpFimModel(CompletionsWire(base_url=server.url() + "/v1", name="c", model="m"))
    sent: list[int] = []
    try:
        for _ in range(2):
            stream = model.stream(
                FimRequest(prefix="return ", suffix=""),
                CancelToken(),
                on_sent=lambda: sent.append(len(server.requests)),
            )
            assert [piece async for piece in stream] == ["x + 1"]
        # httpx keeps its transport private; this is the client the completion lane uses.
        assert isinstance(get_client("completion")._transport, StreamTransport)
        assert get_client("completion") is not get_client("chat")
    finally:
        await aclose_client()
        await server.stop()
    assert server.connections == 1
    assert len(sent) == 2
    assert json.loads(server.requests[0].body)["prompt"] == "return "


async def test_a_provider_error_status_reaches_the_completion_model() -> None:
    def not_found(writer: asyncio.StreamWriter) -> None:
        body = b'{"error": {"message": "no such model"}}'
        head = f"HTTP/1.1 404 Not Found\r\ncontent-length: {len(body)}\r\n\r\n"
        writer.write(head.encode() + body)

    server = await ScriptedServer([not_found]).start()
    model = HttpFimModel(CompletionsWire(base_url=server.url() + "/v1", name="c", model="m"))
    try:
        with pytest.raises(ProviderError) as caught:
            async for _ in model.stream(FimRequest(prefix="", suffix=""), CancelToken()):
                pass
    finally:
        await aclose_client()
        await server.stop()
    assert "no such model" in str(caught.value)
