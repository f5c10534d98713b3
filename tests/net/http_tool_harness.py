"""What the fetch_url and http_request tests share: no real DNS, fake public names, an executor.

The tools call `safe_fetch` without a resolver or a connector, so they use the module defaults
`safe_fetch.default_resolver` and `safe_fetch.default_connect`: `install_network` replaces both
for a test (the production code has no other injection point). The resolver answers only the
names a test gives it (anything else fails the test) and `socket.getaddrinfo` resolves numeric
hosts only; the connector records the vetted address it was handed for a "public" name and
connects to the local server on 127.0.0.1 instead, and it connects loopback addresses as they
are. Nothing here reaches beyond loopback.

Routes report through the server's `events` (threading.Event), so tests wait on events, never
on time; every await on the code under test is bounded (BOUND_S).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpcore
import pytest

from lich_core.net import safe_fetch as sf
from lich_core.tools.builtin import fetch_url, http_request
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.vocabulary import CancelToken, ToolResult
from tests.net.local_server import Handler, LocalServer

ALLOW_ENV = {"PATH": "/usr/bin:/bin", "LICH_ALLOW_PRIVATE_URLS": "1"}
CLOSED_ENV = {"PATH": "/usr/bin:/bin"}
PUBLIC_IP = "93.184.216.34"
PUBLIC_HOST = "docs.example.test"
# The bound on any single await of the code under test (a hang fails, it never blocks the run).
BOUND_S = 15.0

_REAL_CONNECT = sf.default_connect


@dataclass
class FakeNetwork:
    """The resolver table (name -> addresses) and the connections made (vetted ip, port)."""

    local_port: int = 0
    names: dict[str, list[str]] = field(default_factory=dict)
    resolved: list[str] = field(default_factory=list)
    connected: list[tuple[str, int]] = field(default_factory=list)

    async def resolve(self, host: str, port: int) -> list[str]:
        self.resolved.append(host)
        if host not in self.names:
            raise AssertionError(f"unexpected resolution of {host!r}")
        return list(self.names[host])

    async def connect(
        self, ip: str, port: int, timeout: float | None
    ) -> httpcore.AsyncNetworkStream:
        self.connected.append((ip, port))
        if ip in ("127.0.0.1", "::1"):
            return await _REAL_CONNECT(ip, port, timeout)
        if sf.check_address(ip) is not None:
            raise AssertionError(f"a refused address was handed to the connector: {ip}")
        assert self.local_port, "no local server to route public addresses to"
        return await _REAL_CONNECT("127.0.0.1", self.local_port, timeout)


def install_network(monkeypatch: pytest.MonkeyPatch) -> FakeNetwork:
    """Replace safe_fetch's default resolver and connector; make real DNS impossible."""
    network = FakeNetwork()
    monkeypatch.setattr(sf, "default_resolver", network.resolve)
    monkeypatch.setattr(sf, "default_connect", network.connect)
    real_getaddrinfo = socket.getaddrinfo

    def numeric_only(
        host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> Any:  # noqa: A002
        return real_getaddrinfo(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)

    monkeypatch.setattr(socket, "getaddrinfo", numeric_only)
    # The opt-out must come from the tool's environment; the test process's own never leaks in.
    monkeypatch.delenv("LICH_ALLOW_PRIVATE_URLS", raising=False)
    return network


def make_executor(
    work_dir: Path, env: dict[str, str] | None = None, gate: CapabilityGate | None = None
) -> ToolExecutor:
    registry = ToolRegistry()
    registry.register(fetch_url.TOOL)
    registry.register(http_request.TOOL)
    return ToolExecutor(
        registry, gate=gate, work_dir=work_dir, env=CLOSED_ENV if env is None else env
    )


async def run_tool(
    work_dir: Path,
    name: str,
    args: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    cancel: CancelToken | None = None,
    gate: CapabilityGate | None = None,
) -> ToolResult:
    executor = make_executor(work_dir, env, gate)
    ctx = executor.default_context()
    if cancel is not None:
        ctx.cancel = cancel
    return await asyncio.wait_for(executor.execute(name, args, ctx), BOUND_S)


async def wait_event(server: LocalServer, name: str) -> None:
    assert await asyncio.to_thread(server.events[name].wait, BOUND_S), f"event {name} never came"


# ---------------------------------------------------------------------------------------------
# Routes both tool test files use


def slow_route(h: Handler) -> None:
    """Headers and a first part of a long body, then nothing until the client hangs up."""
    server = h.server.local
    h.close_connection = True
    try:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", "1000000")
        h.end_headers()
        h.wfile.write(b"first part")
        h.wfile.flush()
    except OSError:
        server.events["slow-hung-up"].set()
        return
    server.events["slow-first-part"].set()
    if h.wait_for_hang_up():
        server.events["slow-hung-up"].set()


def stall_route(h: Handler) -> None:
    """No answer at all until the client hangs up."""
    server = h.server.local
    server.events["stall-request"].set()
    if h.wait_for_hang_up():
        server.events["stall-hung-up"].set()
    h.close_connection = True


def redirect_route(h: Handler) -> None:
    status = int(h.recorded.query.get("status", ["302"])[0])
    h.reply(status, b"moved", {"Location": h.recorded.query["to"][0]})


@contextlib.contextmanager
def serving_publicly(local: LocalServer, network: FakeNetwork) -> Iterator[LocalServer]:
    """Run `local` on 127.0.0.1 and make PUBLIC_HOST resolve to a public IP that connects to it."""
    with local:
        network.local_port = local.port
        network.names[PUBLIC_HOST] = [PUBLIC_IP]
        yield local


def public_url(server: LocalServer, path: str) -> str:
    return server.url(path, host=PUBLIC_HOST)
