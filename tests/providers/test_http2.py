"""HTTP/2, when the optional `h2` package is installed (skipped otherwise): a completion over https
to a server that offers h2 speaks it, and a stream left before its end closes the connection, so
the server stops sending (httpcore forgets such a stream without resetting it).

The server is h2's own state machine over an asyncio TLS server in the test's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from pathlib import Path
from typing import Any

import pytest

from lich_core.completion.model import FimRequest
from lich_core.completion.providers import CompletionsWire, HttpFimModel
from lich_core.providers import http
from lich_core.providers.http import aclose_client
from lich_core.vocabulary import CancelToken
from tests.support.certificates import make_certificates

h2_connection = pytest.importorskip("h2.connection")
h2_config = pytest.importorskip("h2.config")
h2_events = pytest.importorskip("h2.events")

pytestmark = pytest.mark.timeout(30)

EVENT = b'data: {"choices": [{"text": "first"}]}\n\n'


class H2Server:
    """Answers each request with one SSE event; then [DONE] and the stream's end, unless
    `stall`. Records each connection's end (`hung_up`) and the requests' paths."""

    def __init__(self, stall: bool) -> None:
        self.stall = stall
        self.paths: list[str] = []
        self.hung_up: list[asyncio.Event] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self, tls: ssl.SSLContext) -> H2Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hung_up = asyncio.Event()
        self.hung_up.append(hung_up)
        conn = h2_connection.H2Connection(h2_config.H2Configuration(client_side=False))
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        try:
            while data := await reader.read(65536):
                for event in conn.receive_data(data):
                    if isinstance(event, h2_events.RequestReceived):
                        self.paths.append(dict(event.headers)[b":path"].decode())
                    elif isinstance(event, h2_events.StreamEnded):
                        self._answer(conn, event.stream_id)
                writer.write(conn.data_to_send())
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            hung_up.set()
            writer.close()

    def _answer(self, conn: Any, stream_id: int) -> None:
        conn.send_headers(stream_id, [(":status", "200"), ("content-type", "text/event-stream")])
        conn.send_data(stream_id, EVENT)
        if not self.stall:
            conn.send_data(stream_id, b"data: [DONE]\n\n", end_stream=True)


@pytest.fixture
async def h2_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: Any) -> Any:
    authority, certificate, key = make_certificates(tmp_path, "localhost")
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(certificate, key)
    served.set_alpn_protocols(["h2"])
    trusting = ssl.create_default_context(cafile=str(authority))
    monkeypatch.setattr(http, "_verifying_ssl_context", lambda: trusting)
    await aclose_client()
    server = await H2Server(stall=request.param).start(served)
    yield server
    await aclose_client()
    await server.stop()


def model_for(server: H2Server) -> HttpFimModel:
    url = f"https://localhost:{server.port}/v1"
    return HttpFimModel(CompletionsWire(base_url=url, name="completion", model="m"))


@pytest.mark.parametrize("h2_server", [False], indirect=True)
async def test_a_completion_over_https_speaks_http2_when_h2_is_installed(h2_server) -> None:
    model = model_for(h2_server)
    for _ in range(2):
        stream = model.stream(FimRequest(prefix="", suffix=""), CancelToken())
        assert [piece async for piece in stream] == ["first"]
    assert h2_server.paths == ["/v1/completions", "/v1/completions"]
    assert len(h2_server.hung_up) == 1  # one connection, both streams on it


@pytest.mark.parametrize("h2_server", [True], indirect=True)
async def test_a_stream_left_early_over_http2_closes_the_connection(h2_server) -> None:
    stream = model_for(h2_server).stream(FimRequest(prefix="", suffix=""), CancelToken())
    assert await anext(stream) == "first"
    with contextlib.suppress(StopAsyncIteration):
        await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.wait_for(h2_server.hung_up[0].wait(), 10)
