"""An httpx transport for requests where the client's own time counts: HTTP/1.1 over asyncio
streams, the protocol handled by h11, idle connections kept per origin.

Why not httpx's default (httpcore): on a reused connection it spends about 0.4 ms of CPU getting
one request out (its pool's locks, an anyio cancel scope per socket write, the head and the body
written separately), and an inline completion's whole budget in the server is 1 ms. Here the
head and the first body chunk leave in one write, and nothing is locked: a connection is either
idle in the pool or owned by the one response reading it.

Only what the completion client needs: HTTP/1.1 (TLS through the same SSL context as the chat
client), the client's connect/read/write timeouts, keep-alive. No proxies (the clients ignore
the environment anyway), no HTTP/2, no retry. Failures are httpx's own exceptions
(ConnectError, ReadTimeout, RemoteProtocolError, ...) with the OS error as their cause, so the
providers' error mapping reads them as it reads httpcore's. Bodies are passed on as they come
(decoding, its bounds and the deadlines are lich_core.providers.http's, above any transport).

A connection goes back to the pool only clean: a response followed by bytes it did not declare
(more than its Content-Length) is the server's mistake or an attack, and those bytes must never
be read as the next answer, so the connection is closed. An idle connection is not read from
(`pause_reading`): whatever the server sends or closes meanwhile stays in the socket, which is
checked before the connection is used again (`is_usable`, as httpcore does).
"""

from __future__ import annotations

import asyncio
import select
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import h11
import httpx

# A response's status line and headers, at most.
MAX_RESPONSE_HEAD_BYTES = 64 * 1024
READ_CHUNK_BYTES = 64 * 1024
MAX_IDLE_CONNECTIONS_PER_ORIGIN = 4

T = TypeVar("T")
Origin = tuple[str, str, int]


async def _within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """`awaitable`'s result; asyncio.TimeoutError after `seconds` (None: no limit)."""
    if seconds is None:
        return await awaitable
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):  # no task of its own, unlike wait_for
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


@contextmanager
def _as_httpx_errors(
    timeout_error: type[httpx.TimeoutException],
    network_error: type[httpx.NetworkError],
    request: httpx.Request,
) -> Iterator[None]:
    """OS, timeout and protocol failures as the httpx exceptions httpcore would raise."""
    try:
        yield
    except asyncio.TimeoutError as exc:  # before OSError: TimeoutError is one on 3.11+
        raise timeout_error("timed out", request=request) from exc
    except h11.ProtocolError as exc:
        raise httpx.RemoteProtocolError(str(exc), request=request) from exc
    except OSError as exc:
        raise network_error(str(exc) or type(exc).__name__, request=request) from exc


class _Connection:
    """One HTTP/1.1 connection: its streams and h11's state for it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.protocol = h11.Connection(
            h11.CLIENT, max_incomplete_event_size=MAX_RESPONSE_HEAD_BYTES
        )
        self.received = False  # any byte of the current response

    def is_usable(self) -> bool:
        """Idle, and neither closed by the server nor sent anything while it was."""
        return (
            self.protocol.our_state is h11.IDLE
            and not self.writer.is_closing()
            and not self.reader.at_eof()
            and not self._readable()
        )

    def rest(self) -> None:
        """Idle in the pool: stop reading, so what the server sends meanwhile stays in the
        socket for is_usable to see."""
        transport = self.writer.transport
        if isinstance(transport, asyncio.ReadTransport):
            transport.pause_reading()

    def wake(self) -> None:
        transport = self.writer.transport
        if isinstance(transport, asyncio.ReadTransport):
            transport.resume_reading()

    def _readable(self) -> bool:
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return False
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):  # closed meanwhile
            return True
        return bool(readable)

    def has_stray_bytes(self) -> bool:
        """Bytes came after the response's declared end (h11 holds them unread)."""
        return bool(self.protocol.trailing_data[0])

    def write(self, data: bytes) -> None:
        self.writer.write(data)  # sent at once unless the socket's buffer is full

    async def drain(self, timeout_s: float | None) -> None:
        if self.writer.transport.get_write_buffer_size():
            await _within(self.writer.drain(), timeout_s)

    async def next_event(self, read_timeout_s: float | None) -> object:
        while True:
            event = self.protocol.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await _within(self.reader.read(READ_CHUNK_BYTES), read_timeout_s)
            self.received = self.received or bool(data)
            self.protocol.receive_data(data)  # b"": the server closed it (h11 decides if early)

    def can_be_reused(self) -> bool:
        return self.protocol.our_state is h11.DONE and self.protocol.their_state is h11.DONE

    def close(self) -> None:
        self.writer.close()  # the socket closes on the loop's next turn


class StreamTransport(httpx.AsyncBaseTransport):
    """httpx.AsyncClient(transport=StreamTransport(ssl_context)): see the module docstring."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._ssl_context = ssl_context
        self._idle: dict[Origin, list[_Connection]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{url.scheme}://'.", request=request
            )
        default_port = 443 if url.scheme == "https" else 80
        origin = (url.scheme, url.host, url.port or default_port)
        timeouts = request.extensions.get("timeout", {})
        connection = self._idle_connection(origin)
        if connection is not None:
            try:
                return await self._exchange(origin, connection, request)
            except (httpx.WriteError, httpx.ReadError, httpx.RemoteProtocolError):
                if connection.received:
                    raise
                # The server closed it while it was idle and had not seen this request: once
                # more on a new connection (the body is sent again: ours can be).
        connection = await self._connect(origin, timeouts.get("connect"), request)
        return await self._exchange(origin, connection, request)

    async def _exchange(
        self, origin: Origin, connection: _Connection, request: httpx.Request
    ) -> httpx.Response:
        """Send `request` on `connection`; the response with its head read."""
        timeouts = request.extensions.get("timeout", {})
        try:
            with _as_httpx_errors(httpx.WriteTimeout, httpx.WriteError, request):
                await self._send(connection, request, timeouts.get("write"))
            with _as_httpx_errors(httpx.ReadTimeout, httpx.ReadError, request):
                head = await connection.next_event(timeouts.get("read"))
                while isinstance(head, h11.InformationalResponse):  # 100 Continue
                    head = await connection.next_event(timeouts.get("read"))
            if not isinstance(head, h11.Response):
                raise httpx.RemoteProtocolError(
                    "Server disconnected without sending a response.", request=request
                )
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            status_code=head.status_code,
            headers=head.headers,
            stream=_ResponseBody(self, origin, connection, request, timeouts.get("read")),
            extensions={"http_version": b"HTTP/" + head.http_version, "reason_phrase": head.reason},
        )

    async def aclose(self) -> None:
        self._closed = True
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def release(self, origin: Origin, connection: _Connection, complete: bool) -> None:
        """Back to the pool after a whole response and nothing after it; otherwise (or when
        the pool is full) closed."""
        idle = self._idle.setdefault(origin, [])
        if (
            complete
            and connection.can_be_reused()
            and not connection.has_stray_bytes()
            and not self._closed
        ):
            if len(idle) < MAX_IDLE_CONNECTIONS_PER_ORIGIN:
                connection.protocol.start_next_cycle()
                connection.received = False
                connection.rest()
                idle.append(connection)
                return
        connection.close()

    def _idle_connection(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.is_usable():
                connection.wake()
                return connection
            connection.close()
        return None

    async def _connect(
        self, origin: Origin, timeout_s: float | None, request: httpx.Request
    ) -> _Connection:
        scheme, host, port = origin
        tls = scheme == "https"
        with _as_httpx_errors(httpx.ConnectTimeout, httpx.ConnectError, request):
            reader, writer = await _within(
                asyncio.open_connection(
                    host,
                    port,
                    ssl=self._ssl_context if tls else None,
                    server_hostname=host if tls else None,
                ),
                timeout_s,
            )
        return _Connection(reader, writer)

    async def _send(
        self, connection: _Connection, request: httpx.Request, timeout_s: float | None
    ) -> None:
        """The head with the body's first chunk in one write, then the rest as it comes."""
        protocol = connection.protocol
        pending = protocol.send(
            h11.Request(
                method=request.method, target=request.url.raw_path, headers=request.headers.raw
            )
        )
        assert pending is not None
        assert isinstance(request.stream, httpx.AsyncByteStream)
        async for chunk in request.stream:
            if chunk:
                connection.write(pending + (protocol.send(h11.Data(data=chunk)) or b""))
                pending = b""
                await connection.drain(timeout_s)
        connection.write(pending + (protocol.send(h11.EndOfMessage()) or b""))
        await connection.drain(timeout_s)


class _ResponseBody(httpx.AsyncByteStream):
    """A response's body as h11 delivers it; closing it before the end closes the connection."""

    def __init__(
        self,
        transport: StreamTransport,
        origin: Origin,
        connection: _Connection,
        request: httpx.Request,
        read_timeout_s: float | None,
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._connection = connection
        self._request = request
        self._read_timeout_s = read_timeout_s
        self._complete = False
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors(httpx.ReadTimeout, httpx.ReadError, self._request):
            while not self._complete:
                event = await self._connection.next_event(self._read_timeout_s)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    self._complete = True

    async def aclose(self) -> None:
        if not self._released:
            self._released = True
            self._transport.release(self._origin, self._connection, self._complete)
