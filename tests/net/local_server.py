"""A real HTTP(S) server on 127.0.0.1 for the safe_fetch tests, with routes a test registers.

A route is `callable(handler)`: it answers with `handler.reply(...)` or writes by hand. Every
request is recorded (method, path, headers lowercased, body) before the route runs. Routes that
stream or stall report through `events` (threading.Event by name, created on first use) and
`stats`, so a test waits on an event, never on time. While a route waits for the client it
watches the socket: a client that hangs up sets the `<name>-hung-up` event the route names.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# How often a waiting route looks at its socket and at the stop flag (not a synchronisation).
WATCH_INTERVAL_S = 0.02
# How long a waiting route waits at most before it gives up on its own.
ROUTE_WAIT_BOUND_S = 30.0


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: dict[str, list[str]] = field(default_factory=dict)


Route = Callable[["Handler"], None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    local: LocalServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass

    def _dispatch(self) -> None:
        local = self.server.local
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        self.recorded = Recorded(
            self.command,
            parts.path,
            {name.lower(): value for name, value in self.headers.items()},
            body,
            parse_qs(parts.query),
        )
        with local.lock:
            local.requests.append(self.recorded)
        route = local.routes.get(parts.path)
        if route is None:
            self.reply(404, b"no such route")
            return
        route(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    def reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def wait_for_hang_up(self) -> bool:
        """Block until the client closes the connection (True) or the server stops (False)."""
        local = self.server.local
        for _ in range(int(ROUTE_WAIT_BOUND_S / WATCH_INTERVAL_S)):
            if local.stopping.is_set():
                return False
            readable, _, _ = select.select([self.connection], [], [], WATCH_INTERVAL_S)
            if readable:
                try:
                    if self.connection.recv(4096) == b"":
                        return True
                except OSError:
                    return True
        return False


class LocalServer:
    """Real HTTP on 127.0.0.1 (HTTPS with `ssl_context`) in a background thread."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Recorded] = []
        self.events: defaultdict[str, threading.Event] = defaultdict(threading.Event)
        self.stats: dict[str, int] = {}
        self.server_names: list[str | None] = []  # TLS SNI, one per handshake
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._ssl_context = ssl_context
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def start(self) -> LocalServer:
        server = _Server(("127.0.0.1", 0), Handler)
        server.local = self
        if self._ssl_context is not None:
            self._ssl_context.sni_callback = self._record_sni
            server.socket = self._ssl_context.wrap_socket(server.socket, server_side=True)
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def _record_sni(self, _sock: Any, server_name: str | None, _context: Any) -> None:
        self.server_names.append(server_name)

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://{host}:{self.port}{path}"

    def route(self, path: str) -> Callable[[Route], Route]:
        def register(function: Route) -> Route:
            self.routes[path] = function
            return function

        return register

    def paths(self) -> list[str]:
        with self.lock:
            return [request.path for request in self.requests]

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def iter_chunks(total: int, chunk: bytes) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        piece = chunk[: total - sent]
        sent += len(piece)
        yield piece


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
