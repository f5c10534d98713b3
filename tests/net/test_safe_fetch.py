"""safe_fetch: pinned, SSRF-safe outbound requests, against real servers on 127.0.0.1.

Nothing here reaches beyond loopback: names are resolved only by the injected `FakeResolver`
(the module's default resolver is replaced by one that fails the test, and `socket.getaddrinfo`
refuses anything but a numeric host), and "public" addresses are reached through `Router`, a
connector that records the vetted address it was handed and opens the stream to the local
server instead. Tests wait on events (threading.Event set by the server routes), never on time;
every await on the code under test is bounded.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import ssl
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpcore
import pytest

from lich_core.net import safe_fetch as sf
from lich_core.net.safe_fetch import (
    FetchError,
    FetchResult,
    PinnedBackend,
    check_address,
    check_host_name,
    normalise_url,
    safe_fetch,
)
from lich_core.vocabulary import CancelToken
from tests.net.local_server import Handler, LocalServer, closed_port, iter_chunks
from tests.support.certificates import make_certificates

pytestmark = pytest.mark.timeout(60)

ALLOW = {"LICH_ALLOW_PRIVATE_URLS": "1"}
CLOSED: dict[str, str] = {}
PUBLIC_IP = "93.184.216.34"
OTHER_PUBLIC_IP = "93.184.216.35"
# The bound on any single await of the code under test (a hang fails, it never blocks the run).
BOUND_S = 15.0
# What each call gets unless a test is about timing out.
TIMEOUT_S = 10.0
MAX_BYTES = 1_000_000
# httpcore reads the socket 64 KiB at a time.
READ_CHUNK_BYTES = 64 * 1024
BIG_BODY_BYTES = 64 * 1024 * 1024
BOMB_BYTES = 16 * 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Seams: resolver, connector, no real DNS


class FakeResolver:
    """Answers from a table, in order per host (the last answer repeats); records every call."""

    def __init__(self, table: dict[str, list[list[str]]] | None = None) -> None:
        self.table = table or {}
        self.calls: list[str] = []

    @classmethod
    def of(cls, **hosts: str | list[str]) -> FakeResolver:
        table: dict[str, list[list[str]]] = {}
        for host, answer in hosts.items():
            table[host.replace("_", ".")] = [[answer] if isinstance(answer, str) else answer]
        return cls(table)

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.table:
            raise AssertionError(f"unexpected resolution of {host!r}")
        answers = self.table[host]
        return answers[min(self.calls.count(host), len(answers)) - 1]


async def never_resolve(host: str, port: int) -> list[str]:
    raise AssertionError(f"the resolver must not be called (asked for {host!r})")


class CountingStream(httpcore.AsyncNetworkStream):
    """A network stream that counts the bytes the client read off the socket."""

    def __init__(self, inner: httpcore.AsyncNetworkStream, router: Router) -> None:
        self.inner = inner
        self.router = router

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self.inner.read(max_bytes, timeout)
        self.router.bytes_read += len(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        tls = await self.inner.start_tls(ssl_context, server_hostname, timeout)
        return CountingStream(tls, self.router)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class Router:
    """A connector: records each vetted (ip, port) it is handed and connects to the local server.

    With `local_port=None` it connects to the address it was given, which must be loopback.
    """

    def __init__(self, local_port: int | None = None) -> None:
        self.local_port = local_port
        self.calls: list[tuple[str, int]] = []
        self.unreachable: set[str] = set()
        self.bytes_read = 0

    async def __call__(
        self, ip: str, port: int, timeout: float | None
    ) -> httpcore.AsyncNetworkStream:
        self.calls.append((ip, port))
        if ip in self.unreachable:
            raise httpcore.ConnectError(f"{ip} is unreachable")
        if self.local_port is None:
            assert ip in ("127.0.0.1", "::1"), ip
            stream = await sf.default_connect(ip, port, timeout)
        else:
            stream = await sf.default_connect("127.0.0.1", self.local_port, timeout)
        return CountingStream(stream, self)

    @property
    def ips(self) -> list[str]:
        return [ip for ip, _ in self.calls]


async def refuse_connect(ip: str, port: int, timeout: float | None) -> httpcore.AsyncNetworkStream:
    raise AssertionError(f"nothing may be connected to (asked for {ip}:{port})")


@pytest.fixture(autouse=True)
def no_real_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's default resolver fails the test; getaddrinfo resolves numeric hosts only."""

    async def default_resolver_called(host: str, port: int) -> list[str]:
        raise AssertionError(f"the default resolver was called for {host!r}")

    monkeypatch.setattr(sf, "default_resolver", default_resolver_called)
    real_getaddrinfo = socket.getaddrinfo

    def numeric_only(
        host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> Any:  # noqa: A002
        return real_getaddrinfo(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)

    monkeypatch.setattr(socket, "getaddrinfo", numeric_only)


async def fetch(url: str, **kwargs: Any) -> FetchResult:
    kwargs.setdefault("max_bytes", MAX_BYTES)
    kwargs.setdefault("timeout_s", TIMEOUT_S)
    method = kwargs.pop("method", "GET")
    return await asyncio.wait_for(safe_fetch(method, url, **kwargs), BOUND_S)


async def fetch_error(url: str, **kwargs: Any) -> FetchError:
    with pytest.raises(FetchError) as caught:
        await fetch(url, **kwargs)
    return caught.value


async def wait_event(server: LocalServer, name: str) -> None:
    assert await asyncio.to_thread(server.events[name].wait, BOUND_S), f"event {name} never came"


# ---------------------------------------------------------------------------------------------
# The server and its routes


def _ok(h: Handler) -> None:
    h.reply(200, b"hello", {"Content-Type": "text/plain; charset=utf-8"})


def _redirect(h: Handler) -> None:
    status = int(h.recorded.query.get("status", ["302"])[0])
    h.reply(status, b"moved", {"Location": h.recorded.query["to"][0]})


def _chain(h: Handler) -> None:
    left = int(h.recorded.query["n"][0])
    if left > 0:
        h.reply(302, b"", {"Location": f"/chain?n={left - 1}"})
    else:
        _ok(h)


def _loop(h: Handler) -> None:
    h.reply(302, b"", {"Location": "/loop"})


def _big(h: Handler) -> None:
    server = h.server.local
    h.send_response(200)
    h.send_header("Content-Length", str(BIG_BODY_BYTES))
    h.end_headers()
    sent = 0
    try:
        for piece in iter_chunks(BIG_BODY_BYTES, b"x" * READ_CHUNK_BYTES):
            h.wfile.write(piece)
            sent += len(piece)
    except OSError:
        h.close_connection = True
        server.stats["big-sent"] = sent
        server.events["big-hung-up"].set()


def _slow(h: Handler) -> None:
    server = h.server.local
    h.close_connection = True
    try:
        h.send_response(200)
        h.send_header("Content-Length", "1000000")
        h.end_headers()
        h.wfile.write(b"first part")
    except OSError:  # the client is gone already
        server.events["slow-hung-up"].set()
        return
    server.events["slow-first-part"].set()
    if h.wait_for_hang_up():
        server.events["slow-hung-up"].set()


def _stall(h: Handler) -> None:
    server = h.server.local
    server.events["stall-request"].set()
    if h.wait_for_hang_up():
        server.events["stall-hung-up"].set()
    h.close_connection = True


def _drop(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Length", "1000")
    h.end_headers()
    h.wfile.write(b"only this")
    h.connection.shutdown(socket.SHUT_RDWR)
    h.close_connection = True


GZIP_TEXT = b"hello gzip " * 1000
BOMB = gzip.compress(b"\0" * BOMB_BYTES, compresslevel=9)


def _gzip(h: Handler) -> None:
    h.reply(200, gzip.compress(GZIP_TEXT), {"Content-Encoding": "gzip"})


def _deflate_raw(h: Handler) -> None:
    squeeze = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    h.reply(200, squeeze.compress(GZIP_TEXT) + squeeze.flush(), {"Content-Encoding": "deflate"})


def _bomb(h: Handler) -> None:
    h.reply(200, BOMB, {"Content-Encoding": "gzip"})


ROUTES = {
    "/ok": _ok,
    "/redirect": _redirect,
    "/chain": _chain,
    "/loop": _loop,
    "/big": _big,
    "/slow": _slow,
    "/stall": _stall,
    "/drop": _drop,
    "/gzip": _gzip,
    "/deflate-raw": _deflate_raw,
    "/bomb": _bomb,
}


@pytest.fixture
def server() -> Iterator[LocalServer]:
    local = LocalServer()
    local.routes.update(ROUTES)
    with local:
        yield local


def redirect_to(
    server: LocalServer, target: str, status: int = 302, host: str = "127.0.0.1"
) -> str:
    return server.url(f"/redirect?status={status}&to={quote(target, safe='')}", host=host)


# ---------------------------------------------------------------------------------------------
# check_address, check_host_name, normalise_url (pure)

REFUSED_ADDRESSES = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.0.0.1", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"),
    ("100.64.0.1", "cgnat"),
    ("100.127.255.255", "cgnat"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("240.0.0.1", "reserved"),
    ("192.0.0.8", "reserved"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("febf::1", "link-local"),
    ("fec0::1", "site-local"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("2001::1", "teredo"),
    ("100::1", "reserved"),
    ("64:ff9b:1::1", "reserved"),
    ("::ffff:127.0.0.1", "ipv4-mapped loopback"),
    ("::ffff:7f00:1", "ipv4-mapped loopback"),
    ("::ffff:10.1.2.3", "ipv4-mapped private"),
    ("::ffff:169.254.169.254", "ipv4-mapped link-local"),
    ("::ffff:0.0.0.0", "ipv4-mapped unspecified"),
    ("::127.0.0.1", "ipv4-compatible loopback"),
    ("::8.8.8.8", "ipv4-compatible"),
    ("64:ff9b::127.0.0.1", "nat64 loopback"),
    ("64:ff9b::a00:1", "nat64 private"),
    ("2002:7f00:1::", "6to4 loopback"),
    ("2002:c0a8:101::1", "6to4 private"),
    ("2002:a9fe:a9fe::", "6to4 link-local"),
]
PUBLIC_ADDRESSES = [
    "8.8.8.8",
    "1.1.1.1",
    PUBLIC_IP,
    "172.32.0.1",
    "100.128.0.1",
    "11.0.0.1",
    "192.169.0.1",
    "2606:4700::1111",
    "2a00:1450::1",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


@pytest.mark.parametrize(("address", "refused"), REFUSED_ADDRESSES)
def test_check_address_refuses_every_class(address: str, refused: str) -> None:
    assert check_address(address) == refused


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_check_address_allows_public_addresses(address: str) -> None:
    assert check_address(address) is None


@pytest.mark.parametrize("address", ["localhost", "127.1", "", "1.2.3.4.5", "[::1]"])
def test_check_address_rejects_what_is_not_an_address(address: str) -> None:
    with pytest.raises(ValueError):
        check_address(address)


@pytest.mark.parametrize(
    ("host", "refused"),
    [
        ("localhost", "localhost"),
        ("LOCALHOST", "localhost"),
        ("localhost.", "localhost"),
        ("api.localhost", "localhost"),
        ("printer.local", "local"),
        ("a.b.local.", "local"),
        ("example.com", None),
        ("localhost.example.com", None),
        ("notlocalhost", None),
        ("local", None),
        ("mylocal", None),
    ],
)
def test_check_host_name(host: str, refused: str | None) -> None:
    assert check_host_name(host) == refused


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("http://127.1/", "http://127.0.0.1/"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0x7f000001/", "http://127.0.0.1/"),
        ("http://0177.0.0.1/", "http://127.0.0.1/"),
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://0/", "http://0.0.0.0/"),
        ("http://0xffffffff/", "http://255.255.255.255/"),
        ("http://127.0.0.1./", "http://127.0.0.1/"),
        ("http://%31%32%37.0.0.1/", "http://127.0.0.1/"),
        ("http://１２７.０.０.１/", "http://127.0.0.1/"),
        ("http://[::1]:8080/", "http://[::1]:8080/"),
        ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
        ("http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
        ("http://localhost./", "http://localhost/"),
        ("HTTP://LOCALHOST/", "http://localhost/"),
        ("http://%6c%6fcalhost/", "http://localhost/"),
        ("http://ｌｏｃａｌｈｏｓｔ/", "http://localhost/"),
        ("http://user@127.0.0.1/", "http://127.0.0.1/"),
        ("http://user:pw@127.0.0.1/", "http://127.0.0.1/"),
        ("http://evil.com@127.0.0.1/", "http://127.0.0.1/"),
        ("http://127.0.0.1%2f@example.com/", "http://example.com/"),
        ("http://example.com\\@127.0.0.1/", "http://example.com/@127.0.0.1/"),
        ("  https://Example.COM:443/a/../b?q=1#frag ", "https://example.com/b?q=1"),
        ("http://example.com:80", "http://example.com/"),
        ("http://ünicode.example/", "http://xn--nicode-2ya.example/"),
    ],
)
def test_normalise_url_spellings(url: str, normalised: str) -> None:
    assert str(normalise_url(url)) == normalised


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/",
        "gopher://example.com:70/_x",
        "javascript:alert(1)",
        "data:text/plain,hi",
        "//example.com/",
        "example.com",
        "http://",
        "http:example.com",
        "http://:80/",
        "http://example.com:99999/",
        "http://example.com:0/",
        "http://example.com:8x/",
        "http://1.2.3.4.5/",
        "http://4294967296/",
        "http://example.0x/",
        "http://[::1/",
        "http://[fe80::1%25eth0]/",
        "http://a b.example/",
        "http://a..example/",
        "http://%zz.example/",
        "http://%ff.example/",
    ],
)
def test_normalise_url_refuses_what_is_not_an_http_url(url: str) -> None:
    with pytest.raises(FetchError) as caught:
        normalise_url(url)
    assert caught.value.code == "invalid_url"
    assert str(caught.value).startswith("invalid_url: ")


def test_fetch_error_is_code_colon_message() -> None:
    error = FetchError("blocked_url", "http://10.0.0.1/: 10.0.0.1 is a private address")
    assert str(error) == "blocked_url: http://10.0.0.1/: 10.0.0.1 is a private address"
    assert (error.code, error.message) == (
        "blocked_url",
        "http://10.0.0.1/: 10.0.0.1 is a private address",
    )


# ---------------------------------------------------------------------------------------------
# Refusals end to end: nothing is resolved or connected


BLOCKED_SPELLINGS = [
    ("http://127.0.0.1:{port}/ok", "loopback"),
    ("http://127.1:{port}/ok", "loopback"),
    ("http://2130706433:{port}/ok", "loopback"),
    ("http://0x7f000001:{port}/ok", "loopback"),
    ("http://0177.0.0.1:{port}/ok", "loopback"),
    ("http://127.0.0.1.:{port}/ok", "loopback"),
    ("http://%31%32%37.0.0.1:{port}/ok", "loopback"),
    ("http://[::1]:{port}/ok", "loopback"),
    ("http://[::ffff:127.0.0.1]:{port}/ok", "ipv4-mapped loopback"),
    ("http://[::127.0.0.1]:{port}/ok", "ipv4-compatible loopback"),
    ("http://[64:ff9b::7f00:1]:{port}/ok", "nat64 loopback"),
    ("http://[2002:7f00:1::]:{port}/ok", "6to4 loopback"),
    ("http://user@127.0.0.1:{port}/ok", "loopback"),
    ("http://evil.com@127.0.0.1:{port}/ok", "loopback"),
    ("HTTP://127.0.0.1:{port}/ok", "loopback"),
    ("http://localhost:{port}/ok", "localhost"),
    ("http://localhost.:{port}/ok", "localhost"),
    ("HTTP://LOCALHOST:{port}/ok", "localhost"),
    ("http://%6c%6fcalhost:{port}/ok", "localhost"),
    ("http://ｌｏｃａｌｈｏｓｔ:{port}/ok", "localhost"),
    ("http://app.localhost:{port}/ok", "localhost"),
    ("http://printer.local:{port}/ok", "local"),
    ("http://10.0.0.1:{port}/", "private"),
    ("http://172.16.0.1:{port}/", "private"),
    ("http://192.168.0.1:{port}/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[fe80::1]:{port}/", "link-local"),
    ("http://[fc00::1]:{port}/", "unique-local"),
    ("http://[fd00::1]:{port}/", "unique-local"),
    ("http://100.64.0.1:{port}/", "cgnat"),
    ("http://224.0.0.1:{port}/", "multicast"),
    ("http://[ff02::1]:{port}/", "multicast"),
    ("http://255.255.255.255:{port}/", "broadcast"),
    ("http://0.0.0.0:{port}/", "unspecified"),
    ("http://0:{port}/", "unspecified"),
    ("http://[::]:{port}/", "unspecified"),
    ("http://240.0.0.1:{port}/", "reserved"),
    ("https://10.0.0.1/", "private"),
]


@pytest.mark.parametrize(("template", "refused"), BLOCKED_SPELLINGS)
async def test_every_refused_spelling_is_blocked_without_resolving(
    server: LocalServer, template: str, refused: str
) -> None:
    error = await fetch_error(
        template.format(port=server.port),
        env=CLOSED,
        resolver=never_resolve,
        connect=refuse_connect,
    )
    assert error.code == "blocked_url"
    assert error.message.endswith(f"({refused})")
    assert server.requests == []


@pytest.mark.parametrize(
    ("address", "refused"), REFUSED_ADDRESSES[::3] + [("127.0.0.1", "loopback")]
)
async def test_a_name_resolving_to_a_refused_address_is_blocked(address: str, refused: str) -> None:
    resolver = FakeResolver.of(evil_test=address)
    error = await fetch_error(
        "http://evil.test/", env=CLOSED, resolver=resolver, connect=refuse_connect
    )
    assert error.code == "blocked_url"
    assert f"evil.test resolves to {address} ({refused})" in error.message
    assert resolver.calls == ["evil.test"]


async def test_one_refused_address_among_public_ones_blocks_the_name() -> None:
    resolver = FakeResolver.of(mixed_test=[PUBLIC_IP, "10.0.0.7", OTHER_PUBLIC_IP])
    error = await fetch_error(
        "http://mixed.test/", env=CLOSED, resolver=resolver, connect=refuse_connect
    )
    assert error.code == "blocked_url"
    assert "10.0.0.7 (private)" in error.message


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "gopher://example.com/",
        "javascript:alert(1)",
        "data:text/html,x",
        "ws://example.com/",
        "not a url",
    ],
)
async def test_non_http_schemes_are_invalid_urls(url: str) -> None:
    error = await fetch_error(url, env=ALLOW, resolver=never_resolve, connect=refuse_connect)
    assert error.code == "invalid_url"
    assert str(error).startswith("invalid_url: ")


# ---------------------------------------------------------------------------------------------
# The operator opt-out


async def test_the_opt_out_reaches_a_loopback_server(server: LocalServer) -> None:
    result = await fetch(server.url("/ok"), env=ALLOW, resolver=never_resolve)
    assert (result.status, result.body, result.truncated) == (200, b"hello", False)
    assert result.peer_ip == "127.0.0.1"
    assert result.url == result.final_url == server.url("/ok")
    assert server.requests[0].headers["host"] == f"127.0.0.1:{server.port}"


@pytest.mark.parametrize("value", ["true", "yes", "0", " 1", "1 ", "", "01", "１", "TRUE"])
async def test_the_opt_out_is_exactly_1(server: LocalServer, value: str) -> None:
    error = await fetch_error(
        server.url("/ok"), env={"LICH_ALLOW_PRIVATE_URLS": value}, resolver=never_resolve
    )
    assert error.code == "blocked_url"
    assert server.requests == []


async def test_the_opt_out_defaults_to_the_process_environment(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LICH_ALLOW_PRIVATE_URLS", "1")
    assert (await fetch(server.url("/ok"), resolver=never_resolve)).status == 200
    monkeypatch.delenv("LICH_ALLOW_PRIVATE_URLS")
    assert (await fetch_error(server.url("/ok"), resolver=never_resolve)).code == "blocked_url"
    # An env passed in wins over the process environment.
    monkeypatch.setenv("LICH_ALLOW_PRIVATE_URLS", "1")
    assert (
        await fetch_error(server.url("/ok"), env=CLOSED, resolver=never_resolve)
    ).code == "blocked_url"


async def test_the_opt_out_still_resolves_once_and_pins(server: LocalServer) -> None:
    resolver = FakeResolver.of(public_test="127.0.0.1", localhost="127.0.0.1")
    result = await fetch(server.url("/ok", host="public.test"), env=ALLOW, resolver=resolver)
    assert result.status == 200 and result.peer_ip == "127.0.0.1"
    assert server.requests[0].headers["host"] == f"public.test:{server.port}"
    result = await fetch(server.url("/ok", host="localhost"), env=ALLOW, resolver=resolver)
    assert result.status == 200
    assert server.requests[1].headers["host"] == f"localhost:{server.port}"
    assert resolver.calls == ["public.test", "localhost"]


# ---------------------------------------------------------------------------------------------
# Pinning


async def test_a_public_name_connects_only_to_its_vetted_address(server: LocalServer) -> None:
    resolver = FakeResolver.of(public_test=PUBLIC_IP)
    router = Router(server.port)
    result = await fetch(
        server.url("/ok", host="public.test"), env=CLOSED, resolver=resolver, connect=router
    )
    assert (result.status, result.body) == (200, b"hello")
    assert router.calls == [(PUBLIC_IP, server.port)]
    assert result.peer_ip == PUBLIC_IP
    assert resolver.calls == ["public.test"]
    # The URL was not rewritten: the server was asked for the name.
    assert server.requests[0].headers["host"] == f"public.test:{server.port}"


async def test_dns_rebinding_cannot_change_the_connected_address(server: LocalServer) -> None:
    # The name answers a public address first and loopback afterwards: the one resolution per
    # hop is the one connected to.
    resolver = FakeResolver({"rebind.test": [[PUBLIC_IP], ["127.0.0.1"]]})
    router = Router(server.port)
    result = await fetch(
        server.url("/ok", host="rebind.test"), env=CLOSED, resolver=resolver, connect=router
    )
    assert result.status == 200
    assert resolver.calls == ["rebind.test"]
    assert router.ips == [PUBLIC_IP]


async def test_each_redirect_hop_is_resolved_and_vetted_again(server: LocalServer) -> None:
    resolver = FakeResolver({"rebind.test": [[PUBLIC_IP], ["127.0.0.1"]]})
    router = Router(server.port)
    url = redirect_to(server, "/ok", host="rebind.test")
    error = await fetch_error(url, env=CLOSED, resolver=resolver, connect=router)
    assert error.code == "blocked_url"
    assert "rebind.test resolves to 127.0.0.1 (loopback)" in error.message
    assert resolver.calls == ["rebind.test", "rebind.test"]
    assert router.ips == [PUBLIC_IP]
    assert server.paths() == ["/redirect"]


async def test_the_backend_refuses_hosts_it_has_no_pin_for() -> None:
    router = Router(closed_port())
    backend = PinnedBackend({("public.test", 443): [PUBLIC_IP]}, connect=router)
    for host, port in (
        ("other.test", 443),
        ("public.test", 80),
        (PUBLIC_IP, 443),
        ("127.0.0.1", 443),
    ):
        with pytest.raises(httpcore.ConnectError, match="unpinned"):
            await backend.connect_tcp(host, port)
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_unix_socket("/var/run/docker.sock")
    assert router.calls == []


async def test_a_caller_host_header_cannot_override_the_pinned_host(server: LocalServer) -> None:
    resolver = FakeResolver.of(public_test=PUBLIC_IP)
    await fetch(
        server.url("/ok", host="public.test"),
        env=CLOSED,
        resolver=resolver,
        connect=Router(server.port),
        headers={"Host": "internal.corp", "X-Extra": "kept"},
    )
    assert server.requests[0].headers["host"] == f"public.test:{server.port}"
    assert server.requests[0].headers["x-extra"] == "kept"


async def test_an_unreachable_address_falls_back_to_the_next_vetted_one(
    server: LocalServer,
) -> None:
    resolver = FakeResolver.of(multi_test=[PUBLIC_IP, OTHER_PUBLIC_IP])
    router = Router(server.port)
    router.unreachable.add(PUBLIC_IP)
    result = await fetch(
        server.url("/ok", host="multi.test"), env=CLOSED, resolver=resolver, connect=router
    )
    assert result.status == 200
    assert router.ips == [PUBLIC_IP, OTHER_PUBLIC_IP]
    assert result.peer_ip == OTHER_PUBLIC_IP
    assert resolver.calls == ["multi.test"]


async def test_the_module_default_resolver_is_the_one_used(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = FakeResolver.of(public_test=PUBLIC_IP)
    monkeypatch.setattr(sf, "default_resolver", resolver)
    result = await fetch(
        server.url("/ok", host="public.test"), env=CLOSED, connect=Router(server.port)
    )
    assert result.status == 200 and resolver.calls == ["public.test"]


# --- TLS: SNI and the certificate are the original host's -----------------------------------


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[LocalServer, ssl.SSLContext]]:
    ca_path, leaf_path, key_path = make_certificates(tmp_path, "public.test")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(leaf_path, key_path)
    local = LocalServer(server_context)
    local.routes.update(ROUTES)
    client_context = ssl.create_default_context(cafile=str(ca_path))
    with local:
        yield local, client_context


async def test_tls_uses_the_original_host_for_sni_and_the_certificate(
    tls_server: tuple[LocalServer, ssl.SSLContext],
) -> None:
    server, client_context = tls_server
    resolver = FakeResolver.of(public_test=PUBLIC_IP, other_test=PUBLIC_IP)
    router = Router(server.port)
    result = await fetch(
        server.url("/ok", host="public.test"),
        env=CLOSED,
        resolver=resolver,
        connect=router,
        ssl_context=client_context,
    )
    assert (result.status, result.body, result.peer_ip) == (200, b"hello", PUBLIC_IP)
    assert server.url("/ok", host="public.test").startswith("https://")
    assert server.server_names == ["public.test"]
    assert server.requests[0].headers["host"] == f"public.test:{server.port}"
    # The certificate is checked against the URL's host, not the address connected to.
    error = await fetch_error(
        server.url("/ok", host="other.test"),
        env=CLOSED,
        resolver=resolver,
        connect=router,
        ssl_context=client_context,
    )
    assert error.code == "network_error"
    assert "certificate" in error.message.lower() or "hostname" in error.message.lower()
    assert len(server.requests) == 1


# ---------------------------------------------------------------------------------------------
# Redirects


async def test_five_redirects_are_followed(server: LocalServer) -> None:
    result = await fetch(server.url("/chain?n=5"), env=ALLOW, resolver=never_resolve)
    assert (result.status, result.body) == (200, b"hello")
    assert result.redirects == tuple(server.url(f"/chain?n={n}") for n in range(4, -1, -1))
    assert result.final_url == server.url("/chain?n=0")
    assert result.url == server.url("/chain?n=5")


async def test_a_sixth_redirect_is_too_many(server: LocalServer) -> None:
    error = await fetch_error(server.url("/chain?n=6"), env=ALLOW, resolver=never_resolve)
    assert error.code == "too_many_redirects"
    assert len(server.requests) == 6


async def test_a_redirect_loop_ends_as_too_many_redirects(server: LocalServer) -> None:
    error = await fetch_error(server.url("/loop"), env=ALLOW, resolver=never_resolve)
    assert error.code == "too_many_redirects"
    assert server.paths() == ["/loop"] * 6
    error = await fetch_error(
        server.url("/loop"), env=ALLOW, resolver=never_resolve, max_redirects=1
    )
    assert error.code == "too_many_redirects"
    assert len(server.requests) == 8


async def test_redirects_can_be_returned_as_they_are(server: LocalServer) -> None:
    result = await fetch(
        redirect_to(server, "/ok", 307), env=ALLOW, resolver=never_resolve, follow_redirects=False
    )
    assert result.status == 307 and result.headers["location"] == "/ok"
    assert result.redirects == () and result.body == b"moved"


async def test_a_relative_location_is_joined_to_the_current_url(server: LocalServer) -> None:
    result = await fetch(redirect_to(server, "ok?x=1"), env=ALLOW, resolver=never_resolve)
    assert result.final_url == server.url("/ok?x=1")
    assert result.status == 200


@pytest.mark.parametrize(
    ("status", "method", "then", "body_kept"),
    [
        (303, "POST", "GET", False),
        (303, "PUT", "GET", False),
        (301, "POST", "GET", False),
        (302, "POST", "GET", False),
        (307, "POST", "POST", True),
        (308, "POST", "POST", True),
        (307, "PUT", "PUT", True),
        (302, "PUT", "PUT", True),
        (301, "DELETE", "DELETE", False),
        (303, "HEAD", "HEAD", False),
    ],
)
async def test_redirect_method_and_body_as_browsers_do(
    server: LocalServer, status: int, method: str, then: str, body_kept: bool
) -> None:
    body = b'{"a": 1}' if method in ("POST", "PUT") else None
    await fetch(
        redirect_to(server, "/ok", status),
        method=method,
        body=body,
        env=ALLOW,
        resolver=never_resolve,
        headers={"Content-Type": "application/json"},
    )
    first, second = server.requests
    assert (first.method, first.body) == (method, body or b"")
    assert second.method == then and second.path == "/ok"
    if body_kept:
        assert second.body == body and second.headers["content-type"] == "application/json"
    else:
        assert second.body == b""
        if then == "GET":
            assert "content-type" not in second.headers


async def test_a_redirect_from_a_public_host_to_loopback_is_blocked(server: LocalServer) -> None:
    resolver = FakeResolver.of(public_test=PUBLIC_IP)
    router = Router(server.port)
    for target in (
        server.url("/ok"),
        server.url("/ok", host="localhost"),
        "http://[::1]/",
        "http://2130706433/",
        "http://169.254.169.254/latest/meta-data/",
    ):
        error = await fetch_error(
            redirect_to(server, target, host="public.test"),
            env=CLOSED,
            resolver=resolver,
            connect=router,
        )
        assert error.code == "blocked_url", target
    assert set(server.paths()) == {"/redirect"}  # /ok was never reached
    assert set(router.ips) == {PUBLIC_IP}
    assert set(resolver.calls) == {"public.test"}  # localhost was refused unresolved


async def test_a_redirect_to_another_scheme_is_an_invalid_url(server: LocalServer) -> None:
    for target in ("file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO", "ftp://example.com/"):
        error = await fetch_error(redirect_to(server, target), env=ALLOW, resolver=never_resolve)
        assert error.code == "invalid_url", target


async def test_credentials_are_dropped_when_a_redirect_changes_origin(server: LocalServer) -> None:
    resolver = FakeResolver.of(a_test=PUBLIC_IP, b_test=OTHER_PUBLIC_IP)
    router = Router(server.port)
    secrets = {"Authorization": "Bearer s3cret", "Cookie": "session=1", "X-Trace": "kept"}
    # Same origin: kept.
    await fetch(
        redirect_to(server, "/ok", host="a.test"),
        headers=secrets,
        env=CLOSED,
        resolver=resolver,
        connect=router,
    )
    # Another host: dropped (the other headers stay).
    await fetch(
        redirect_to(server, server.url("/ok", host="b.test"), host="a.test"),
        headers=secrets,
        env=CLOSED,
        resolver=resolver,
        connect=router,
    )
    same, other = server.requests[1], server.requests[3]
    assert (
        same.headers["authorization"] == "Bearer s3cret" and same.headers["cookie"] == "session=1"
    )
    assert "authorization" not in other.headers and "cookie" not in other.headers
    assert other.headers["x-trace"] == "kept"
    assert other.headers["host"] == f"b.test:{server.port}"
    assert router.ips == [PUBLIC_IP, PUBLIC_IP, PUBLIC_IP, OTHER_PUBLIC_IP]


# ---------------------------------------------------------------------------------------------
# Bodies


async def test_an_oversized_body_is_truncated_while_streaming(server: LocalServer) -> None:
    max_bytes = 100_000
    router = Router()
    result = await fetch(
        server.url("/big"), env=ALLOW, resolver=never_resolve, connect=router, max_bytes=max_bytes
    )
    assert result.truncated and result.body == b"x" * max_bytes
    assert result.status == 200 and result.headers["content-length"] == str(BIG_BODY_BYTES)
    # The client stopped reading: what it took off the socket is the limit plus at most one read
    # (and the response head) ...
    assert router.bytes_read <= max_bytes + READ_CHUNK_BYTES + 1024
    # ... and it hung up: the server's writes failed long before the 64 MB were out.
    await wait_event(server, "big-hung-up")
    assert server.stats["big-sent"] < BIG_BODY_BYTES


@pytest.mark.parametrize(
    ("max_bytes", "body", "truncated"),
    [(5, b"hello", False), (6, b"hello", False), (4, b"hell", True), (0, b"", True)],
)
async def test_the_body_limit_is_exact(
    server: LocalServer, max_bytes: int, body: bytes, truncated: bool
) -> None:
    result = await fetch(server.url("/ok"), env=ALLOW, resolver=never_resolve, max_bytes=max_bytes)
    assert (result.body, result.truncated) == (body, truncated)


async def test_gzip_and_deflate_bodies_are_decoded(server: LocalServer) -> None:
    result = await fetch(server.url("/gzip"), env=ALLOW, resolver=never_resolve)
    assert (result.body, result.truncated) == (GZIP_TEXT, False)
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"
    result = await fetch(server.url("/deflate-raw"), env=ALLOW, resolver=never_resolve)
    assert (result.body, result.truncated) == (GZIP_TEXT, False)


async def test_a_decompression_bomb_stops_at_max_bytes(server: LocalServer) -> None:
    router = Router()
    result = await fetch(
        server.url("/bomb"), env=ALLOW, resolver=never_resolve, connect=router, max_bytes=50_000
    )
    assert result.truncated and result.body == b"\0" * 50_000
    assert router.bytes_read <= len(BOMB) + 1024


async def test_the_result_helpers(server: LocalServer) -> None:
    result = await fetch(server.url("/ok"), env=ALLOW, resolver=never_resolve)
    assert result.content_type == "text/plain" and result.charset == "utf-8"
    assert result.text() == "hello" and result.reason == "OK"
    assert result.headers["Content-Type"] == "text/plain; charset=utf-8"
    head = await fetch(server.url("/ok"), method="head", env=ALLOW, resolver=never_resolve)
    assert (head.status, head.body, head.truncated) == (200, b"", False)
    assert server.requests[1].method == "HEAD"


async def test_a_connection_dropped_mid_body_is_a_network_error(server: LocalServer) -> None:
    error = await fetch_error(server.url("/drop"), env=ALLOW, resolver=never_resolve)
    assert error.code == "network_error"


async def test_a_refused_connection_is_a_network_error() -> None:
    error = await fetch_error(
        f"http://127.0.0.1:{closed_port()}/", env=ALLOW, resolver=never_resolve
    )
    assert error.code == "network_error"


async def test_an_unresolvable_name_is_a_network_error() -> None:
    async def nxdomain(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async def nothing(host: str, port: int) -> list[str]:
        return []

    async def garbage(host: str, port: int) -> list[str]:
        return ["not-an-ip"]

    for resolver in (nxdomain, nothing, garbage):
        error = await fetch_error(
            "http://nowhere.test/", env=CLOSED, resolver=resolver, connect=refuse_connect
        )
        assert error.code == "network_error"
        assert "nowhere.test" in error.message


async def test_invalid_methods_and_headers_are_invalid_requests(server: LocalServer) -> None:
    for method in ("GET /x", "", "GE\nT"):
        error = await fetch_error(
            server.url("/ok"), method=method, env=ALLOW, resolver=never_resolve
        )
        assert error.code == "invalid_request", method
    for headers in (
        {"X-Bad": "a\r\nInjected: 1"},
        {"X-Bad": "a\nb"},
        {"Bad Name": "x"},
        {"X:Y": "z"},
    ):
        error = await fetch_error(
            server.url("/ok"),
            headers=headers,
            env=ALLOW,
            resolver=never_resolve,
            connect=refuse_connect,
        )
        assert error.code == "invalid_request", headers
    assert server.requests == []


async def test_programming_errors_raise_value_error() -> None:
    for kwargs in (
        {"max_bytes": -1},
        {"timeout_s": 0},
        {"timeout_s": float("nan")},
        {"max_redirects": -1},
    ):
        with pytest.raises(ValueError):
            await fetch("http://public.test/", env=CLOSED, resolver=never_resolve, **kwargs)


# ---------------------------------------------------------------------------------------------
# Timeouts and cancellation


async def test_a_slow_body_times_out(server: LocalServer) -> None:
    error = await fetch_error(server.url("/slow"), env=ALLOW, resolver=never_resolve, timeout_s=0.5)
    assert error.code == "timeout"
    await wait_event(server, "slow-hung-up")


async def test_a_server_that_never_answers_times_out(server: LocalServer) -> None:
    error = await fetch_error(
        server.url("/stall"), env=ALLOW, resolver=never_resolve, timeout_s=0.5
    )
    assert error.code == "timeout"
    await wait_event(server, "stall-hung-up")


async def test_cancelling_mid_body_aborts_promptly(server: LocalServer) -> None:
    cancel = CancelToken()
    task = asyncio.ensure_future(
        safe_fetch(
            "GET",
            server.url("/slow"),
            max_bytes=MAX_BYTES,
            timeout_s=60,
            cancel=cancel,
            env=ALLOW,
            resolver=never_resolve,
        )
    )
    await wait_event(server, "slow-first-part")
    assert not task.done()
    cancel.cancel("user pressed stop")
    with pytest.raises(FetchError) as caught:
        await asyncio.wait_for(task, 5)  # far inside the 60 s deadline: the cancel ended it
    assert caught.value.code == "cancelled"
    assert "user pressed stop" in caught.value.message
    await wait_event(server, "slow-hung-up")


async def test_cancelling_while_resolving_aborts(server: LocalServer) -> None:
    entered = asyncio.Event()

    async def hanging(host: str, port: int) -> list[str]:
        entered.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    cancel = CancelToken()
    task = asyncio.ensure_future(
        safe_fetch(
            "GET",
            "http://slow-dns.test/",
            max_bytes=10,
            timeout_s=60,
            cancel=cancel,
            env=CLOSED,
            resolver=hanging,
            connect=refuse_connect,
        )
    )
    await asyncio.wait_for(entered.wait(), BOUND_S)
    cancel.cancel()
    with pytest.raises(FetchError) as caught:
        await asyncio.wait_for(task, 5)
    assert caught.value.code == "cancelled"


async def test_an_already_cancelled_token_sends_nothing(server: LocalServer) -> None:
    cancel = CancelToken()
    cancel.cancel()
    error = await fetch_error(server.url("/ok"), cancel=cancel, env=ALLOW, resolver=never_resolve)
    assert error.code == "cancelled"
    assert server.requests == []


async def test_a_finished_fetch_forgets_the_token(server: LocalServer) -> None:
    cancel = CancelToken()
    await fetch(server.url("/ok"), cancel=cancel, env=ALLOW, resolver=never_resolve)
    assert cancel._callbacks == []
    cancel.cancel()  # late: harmless


async def test_cancelling_the_calling_task_closes_the_connection(server: LocalServer) -> None:
    task = asyncio.ensure_future(
        safe_fetch(
            "GET",
            server.url("/slow"),
            max_bytes=MAX_BYTES,
            timeout_s=60,
            env=ALLOW,
            resolver=never_resolve,
        )
    )
    await wait_event(server, "slow-first-part")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    await wait_event(server, "slow-hung-up")


def test_responses_are_plain_json_friendly() -> None:
    # The result is a frozen dataclass tools can render; a FetchError pickles through its args.
    error = FetchError("timeout", "x")
    assert json.dumps(str(error)) == '"timeout: x"'
    assert FetchError(*error.args).code == "timeout"
