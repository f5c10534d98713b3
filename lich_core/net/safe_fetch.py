"""safe_fetch: the one pinned, SSRF-safe outbound HTTP request of every network tool.

fetch_url, http_request and web_search send every request through `safe_fetch` (and nothing
else in lich_core opens an outbound connection for a tool). It is built on httpx/httpcore - no
hand-written HTTP - and guarantees that the address a request is connected to is an address that
was vetted for that very hop.

Pinning (why DNS rebinding cannot slip between the check and the connect)
-------------------------------------------------------------------------
For each hop `safe_fetch`:

1. normalises the URL (`normalise_url`): only http/https; the host is percent-decoded, mapped
   to ASCII (IDNA/UTS 46), lowercased, a trailing dot dropped; every IPv4 spelling a browser
   accepts (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`, `0x7f.1`) becomes the dotted
   quad, IPv6 literals their compressed form; userinfo (`http://user@host/`) is dropped, never
   sent, and can never hide the host (`http://evil.com@127.0.0.1/` is a request to 127.0.0.1);
2. vets the host: a literal address is checked as it is (the resolver is never called); a name
   is refused outright when it is `localhost`, `*.localhost` or `*.local`, and otherwise
   resolved exactly once through the resolver (default: `loop.getaddrinfo`, in a thread) and
   refused when ANY address it returns is in a refused class (`check_address`);
3. sends the request through a `PinnedTransport`, a small `httpx.AsyncBaseTransport` over an
   `httpcore.AsyncConnectionPool` whose `network_backend=` is a `PinnedBackend`. The pool asks
   the backend to `connect_tcp(host, port)` with the URL's own host; the backend looks
   `(host, port)` up in the pin set made for this hop and connects only to the vetted addresses
   (in order, falling back to the next one on a connect failure) - a host that is not pinned is
   refused. The URL is never rewritten to the address: the original host stays in the Host
   header and is the TLS server name (SNI) and the name the certificate is verified against.
   Nothing between the check and the connect resolves the name again;
4. follows redirects by hand (the transport never follows them): each Location is joined to
   the current URL, normalised and vetted again, with a new pin set, at most `max_redirects`
   (default `MAX_REDIRECTS`) times - a loop ends as too many redirects. 303 (and 301/302 after
   a POST) become a GET without a body; 307/308 keep the method and the body, as browsers do.
   Authorization, Cookie and Proxy-Authorization are dropped when a redirect changes the
   origin (scheme, host or port).

Refused address classes (`check_address` returns the class, `None` for a public address)
-----------------------------------------------------------------------------------------
IPv4: `unspecified` (0.0.0.0/8: 0.0.0.0 reaches the local host on Linux), `loopback`
(127/8), `private` (10/8, 172.16/12, 192.168/16), `link-local` (169.254/16: cloud metadata),
`cgnat` (100.64/10), `multicast` (224/4), `broadcast` (255.255.255.255), `documentation`
(192.0.2/24, 198.51.100/24, 203.0.113/24), `benchmarking` (198.18/15), `reserved` (240/4,
192.0.0/24, 192.88.99/24 and anything else Python's `ipaddress` does not call global).
IPv6: `unspecified` (::), `loopback` (::1), `link-local` (fe80::/10), `site-local`
(fec0::/10), `unique-local` (fc00::/7), `multicast` (ff00::/8), `documentation`
(2001:db8::/32), `teredo` (2001::/32), `reserved` (100::/64, 64:ff9b:1::/48 and anything else
not global); `ipv4-compatible` (::a.b.c.d, deprecated: always refused); IPv4-mapped
(::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are judged by the IPv4
address they embed (`ipv4-mapped loopback`, `nat64 private`, `6to4 link-local`, ...).
Names: `localhost` (localhost, *.localhost) and `local` (*.local, mDNS) - refused unresolved.

The operator opt-out is exact: `LICH_ALLOW_PRIVATE_URLS=1` in the environment passed in
(`env=`, default `os.environ`) allows every target (names and addresses are still pinned);
any other value, or none, is fail-closed.

Bounds
------
The body is read while streaming and decoded (gzip/deflate, which is all `safe_fetch`
advertises) with a bounded decompressor: reading stops once more than `max_bytes` decoded
bytes have arrived, the connection is closed, and the result says `truncated=True` (the body
holds the first `max_bytes` bytes). A body in another or a stacked encoding is returned as it
came. One deadline (`timeout_s`) covers every hop (resolution, connect, headers, body); the
caller's cancel token (the interface of `lich_core.vocabulary.CancelToken`: `cancelled` and
`on_cancel`) aborts the request at any point, mid-body included.

Errors
------
Every failure raises `FetchError(code, message)`, whose `str()` is `"<code>: <message>"`; the
codes are stable: `invalid_url` (unparsable URL, scheme other than http/https, bad port, empty
or invalid host), `blocked_url` (a refused name or address class; the message names the
class), `too_many_redirects`, `timeout`, `cancelled`, `invalid_request` (a method, header name
or value the wire format rejects), `network_error` (resolution, connect, TLS, protocol or
decoding failures). Programming errors (negative `max_bytes`, a non-positive `timeout_s`)
raise ValueError. A non-2xx status is not an error: it is in the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import os
import re
import socket
import ssl
import zlib
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Protocol, cast
from urllib.parse import unquote, urljoin, urlsplit

import httpcore
import httpx
import idna

from lich_core import __version__

# ---------------------------------------------------------------------------------------------
# Constants

DEFAULT_TIMEOUT_S = 30.0
MAX_REDIRECTS = 5
# How long a timed-out or cancelled request gets to close its connection before it is left.
CLOSE_GRACE_S = 2.0
ALLOW_PRIVATE_ENV = "LICH_ALLOW_PRIVATE_URLS"
ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_PORT = 65535
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
USER_AGENT = f"lich/{__version__}"
ACCEPT_ENCODING = "gzip, deflate"

# The stable error codes (the prefix of `str(FetchError)`).
INVALID_URL = "invalid_url"
BLOCKED_URL = "blocked_url"
TOO_MANY_REDIRECTS = "too_many_redirects"
TIMEOUT = "timeout"
CANCELLED = "cancelled"
INVALID_REQUEST = "invalid_request"
NETWORK_ERROR = "network_error"

# Headers safe_fetch owns: the Host header always names the URL's host (the pinned hop), and
# the framing follows the body it actually sends.
_OWNED_HEADERS = ("host", "content-length", "transfer-encoding")
_CREDENTIAL_HEADERS = ("authorization", "cookie", "proxy-authorization")
_BODY_HEADERS = ("content-type", "content-encoding", "content-length", "transfer-encoding")
_TOKEN_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP token
# Characters no host may hold once percent-decoded (WHATWG's forbidden host code points).
_FORBIDDEN_HOST_CHARS = frozenset(" #%/:<>?@[\\]^|\"'`{}") | frozenset(map(chr, range(0x21)))
_FORBIDDEN_HOST_CHARS |= frozenset("\x7f")
_DECIMAL_RE = re.compile(r"^[0-9]+$")
_OCTAL_RE = re.compile(r"^[0-7]*$")
_HEX_RE = re.compile(r"^[0-9a-f]*$")
_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?([^"';\s]+)""", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# Errors and results


class FetchError(Exception):
    """The one failure of `safe_fetch`: `str()` is `"<code>: <message>"` (codes: module doc)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class FetchResult:
    """A response: the status and headers of the last hop and its (bounded, decoded) body.

    `url` is the normalised requested URL, `final_url` the URL that answered (the last entry of
    `redirects`, the URLs redirected to in order, or `url`). `headers` are the response's own
    (case-insensitive; Content-Encoding and Content-Length describe the wire, not `body`).
    `peer_ip` is the vetted address the last hop was connected to.
    """

    url: str
    final_url: str
    status: int
    reason: str
    headers: httpx.Headers
    body: bytes
    truncated: bool
    redirects: tuple[str, ...]
    peer_ip: str

    @property
    def content_type(self) -> str:
        """The media type, lowercased, without parameters ("" when the server sent none)."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        match = _CHARSET_RE.search(self.headers.get("content-type", ""))
        return match.group(1) if match else None

    def text(self) -> str:
        """The body as text: the declared charset when Python knows it, else UTF-8 (replacing)."""
        charset = self.charset or "utf-8"
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


class CancelSignal(Protocol):
    """What `safe_fetch` needs of a cancel token (`lich_core.vocabulary.CancelToken` fits)."""

    @property
    def cancelled(self) -> bool: ...

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]: ...


# A resolver maps (host, port) to the addresses the name has (strings, IPv4 or IPv6).
Resolver = Callable[[str, int], Awaitable[Iterable[str]]]
# A connector opens a TCP stream to one vetted address: (ip, port, connect timeout in s).
Connector = Callable[[str, int, float | None], Awaitable[httpcore.AsyncNetworkStream]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


# ---------------------------------------------------------------------------------------------
# The address and name check


def _networks(*specs: tuple[str, str]) -> tuple[tuple[ipaddress._BaseNetwork, str], ...]:
    return tuple((ipaddress.ip_network(network), name) for network, name in specs)


_IPV4_CLASSES = _networks(
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("169.254.0.0/16", "link-local"),
    ("100.64.0.0/10", "cgnat"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "documentation"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("198.18.0.0/15", "benchmarking"),
    ("192.88.99.0/24", "reserved"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)
_IPV6_CLASSES = _networks(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("fc00::/7", "unique-local"),
    ("ff00::/8", "multicast"),
    ("2001:db8::/32", "documentation"),
    ("2001::/32", "teredo"),
    ("100::/64", "reserved"),
    ("64:ff9b:1::/48", "reserved"),
)
_IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")


def _parse_address(ip: str | IPAddress) -> IPAddress:
    if isinstance(ip, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return ip
    return ipaddress.ip_address(ip.strip())


def check_address(ip: str | IPAddress) -> str | None:
    """The refused class of an address ("loopback", "ipv4-mapped private", ...), or None.

    Raises ValueError when `ip` is not an IP address (an IPv6 zone, `fe80::1%eth0`, is fine).
    """
    address = _parse_address(ip)
    if isinstance(address, ipaddress.IPv4Address):
        for network, name in _IPV4_CLASSES:
            if address in network:
                return name
        return None if address.is_global else "reserved"
    address = ipaddress.IPv6Address(address.packed)  # drop the zone
    for network, name in _IPV6_CLASSES:
        if address in network:
            return name
    embedded: ipaddress.IPv4Address | None = None
    form = ""
    if address in _IPV4_MAPPED:
        embedded, form = address.ipv4_mapped, "ipv4-mapped"
    elif address in _IPV4_COMPATIBLE:
        inner = check_address(ipaddress.IPv4Address(address.packed[-4:]))
        return f"ipv4-compatible {inner}" if inner else "ipv4-compatible"
    elif address in _NAT64:
        embedded, form = ipaddress.IPv4Address(address.packed[-4:]), "nat64"
    elif address in _SIX_TO_FOUR:
        embedded, form = address.sixtofour, "6to4"
    if embedded is not None:
        inner = check_address(embedded)
        return f"{form} {inner}" if inner else None
    return None if address.is_global else "reserved"


def check_host_name(host: str) -> str | None:
    """The refused class of a (normalised) host name - "localhost" or "local" - or None."""
    name = host.rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return "localhost"
    if name.endswith(".local"):
        return "local"
    return None


# ---------------------------------------------------------------------------------------------
# URL normalisation


@dataclass(frozen=True)
class _Target:
    url: httpx.URL
    host: str  # the host exactly as the pool hands it to connect_tcp (IPv6 without brackets)
    port: int
    literal: IPAddress | None  # the host when it is an address (no resolution)

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.url.scheme, self.host, self.port)


def _invalid(url: str, why: str) -> FetchError:
    return FetchError(INVALID_URL, f"{why}: {url!r}")


def _parse_ipv4_part(part: str) -> int | None:
    if part.startswith("0x"):
        digits, base, pattern = part[2:], 16, _HEX_RE
    elif len(part) > 1 and part.startswith("0"):
        digits, base, pattern = part[1:], 8, _OCTAL_RE
    else:
        digits, base, pattern = part, 10, _DECIMAL_RE
    if not pattern.match(digits):
        return None
    return int(digits, base) if digits else 0


def _ends_in_number(host: str) -> bool:
    last = host.split(".")[-1]
    return bool(_DECIMAL_RE.match(last)) or (
        last.startswith("0x") and bool(_HEX_RE.match(last[2:]))
    )


def _parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The WHATWG IPv4 parser: 1-4 parts, each decimal, octal (0-prefixed) or hex (0x)."""
    parts = host.split(".")
    if len(parts) > 4 or any(part == "" for part in parts):
        return None
    numbers: list[int] = []
    for part in parts:
        number = _parse_ipv4_part(part)
        if number is None:
            return None
        numbers.append(number)
    *leading, last = numbers
    if any(number > 255 for number in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for index, number in enumerate(leading):
        value += number * 256 ** (3 - index)
    return ipaddress.IPv4Address(value)


def _canonical_host(raw: str, url: str) -> tuple[str, IPAddress | None]:
    """(host as it goes into the URL, the address when it is a literal)."""
    try:
        host = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise _invalid(url, "host is not UTF-8") from None
    if host.startswith("["):
        if not host.endswith("]") or "%" in host:
            raise _invalid(url, "invalid IPv6 host")
        try:
            v6 = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise _invalid(url, "invalid IPv6 host") from None
        return f"[{v6.compressed}]", v6
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError):
            raise _invalid(url, "invalid international host name") from None
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host or any(char in _FORBIDDEN_HOST_CHARS for char in host):
        raise _invalid(url, "invalid host")
    if _ends_in_number(host):
        v4 = _parse_ipv4(host)
        if v4 is None:
            raise _invalid(url, "invalid IPv4 host")
        return str(v4), v4
    if any(label == "" for label in host.split(".")):
        raise _invalid(url, "invalid host")
    return host, None


def _backslashes_as_slashes(text: str) -> str:
    """http(s) URLs read a backslash as a slash before the query or fragment (as browsers do)."""
    end = min(
        (index for index in (text.find("?"), text.find("#")) if index >= 0), default=len(text)
    )
    return text[:end].replace("\\", "/") + text[end:]


def _target(url: str | httpx.URL) -> _Target:
    text = str(url).strip(
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "
    )
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    scheme, colon, rest = text.partition(":")
    scheme = scheme.lower()
    if not colon or scheme not in ALLOWED_SCHEMES:
        shown = scheme if colon and re.match(r"^[a-z][a-z0-9+.-]*$", scheme) else ""
        raise _invalid(str(url), f"unsupported scheme {shown!r}" if shown else "not an http(s) URL")
    rest = _backslashes_as_slashes(rest)
    if not rest.startswith("//"):
        raise _invalid(str(url), "no host")
    try:
        parts = urlsplit(f"{scheme}:{rest}")
    except ValueError:
        raise _invalid(str(url), "unparsable URL") from None
    hostport = parts.netloc.rpartition("@")[2]  # userinfo is dropped, never sent
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise _invalid(str(url), "invalid IPv6 host")
        raw_host, port_text = hostport[: close + 1], hostport[close + 1 :]
        if port_text and not port_text.startswith(":"):
            raise _invalid(str(url), "invalid host")
        port_text = port_text[1:]
    else:
        raw_host, _, port_text = hostport.partition(":")
    if port_text and not _DECIMAL_RE.match(port_text):
        raise _invalid(str(url), "invalid port")
    port = int(port_text) if port_text else DEFAULT_PORTS[scheme]
    if not 0 < port <= MAX_PORT:
        raise _invalid(str(url), "invalid port")
    if not raw_host:
        raise _invalid(str(url), "no host")
    host, literal = _canonical_host(raw_host, str(url))
    authority = host if port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    target = f"{scheme}://{authority}{parts.path or '/'}"
    if parts.query:
        target += f"?{parts.query}"
    try:
        built = httpx.URL(target)
    except (httpx.InvalidURL, UnicodeError, ValueError):
        raise _invalid(str(url), "unparsable URL") from None
    pool_host = built.raw_host.decode("ascii")
    expected = host[1:-1] if literal is not None and literal.version == 6 else host
    if pool_host != expected or built.scheme != scheme:  # defensive: httpx must agree
        raise _invalid(str(url), "ambiguous URL")
    return _Target(built, pool_host, port, literal)


def normalise_url(url: str | httpx.URL) -> httpx.URL:
    """The URL safe_fetch would request for `url` (raises FetchError `invalid_url`).

    Scheme and host lowercased, host percent-decoded and IDNA-mapped, trailing dot and userinfo
    dropped, IPv4 spellings as dotted quads, IPv6 literals compressed, default port omitted,
    fragment dropped.
    """
    return _target(url).url


# ---------------------------------------------------------------------------------------------
# Resolution and connection


async def default_resolver(host: str, port: int) -> list[str]:
    """getaddrinfo in the loop's executor: the addresses of `host` for a TCP connection."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


_ANYIO_BACKEND = httpcore.AnyIOBackend()


async def default_connect(ip: str, port: int, timeout: float | None) -> httpcore.AsyncNetworkStream:
    """Open a TCP stream to the address `ip` (never a name) with httpcore's own backend."""
    return await _ANYIO_BACKEND.connect_tcp(ip, port, timeout=timeout)


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects only to pinned, already vetted addresses.

    `pins` maps (host, port) - as the connection pool asks for them, the URL's host - to the
    vetted addresses; `connect_tcp` of anything else is refused, and nothing is resolved.
    `connected` records each address a stream was opened to.
    """

    def __init__(
        self, pins: Mapping[tuple[str, int], Sequence[str]], connect: Connector | None = None
    ) -> None:
        self._pins = {key: tuple(addresses) for key, addresses in pins.items()}
        self._connect = connect if connect is not None else default_connect
        self.connected: list[str] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = self._pins.get((host, port))
        if not addresses:
            raise httpcore.ConnectError(f"refusing to connect to unpinned {host}:{port}")
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = await self._connect(address, port, timeout)
            except (httpcore.ConnectError, httpcore.ConnectTimeout, OSError) as exc:
                failure = exc
                continue
            self.connected.append(address)
            return stream
        if isinstance(failure, httpcore.ConnectTimeout):
            raise failure
        raise httpcore.ConnectError(f"cannot connect to {host}:{port}: {failure}") from failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not pinned targets")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


# httpcore's exceptions as httpx's (most specific first), so the transport behaves like httpx's.
_ERROR_MAP: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
)


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except tuple(core for core, _ in _ERROR_MAP) as exc:
        for core, mapped in _ERROR_MAP:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise  # pragma: no cover - every listed type maps


class _PinnedResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            with _httpx_errors():
                await close()


@functools.lru_cache(maxsize=1)
def _default_ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose connections go only to the pinned addresses (`PinnedBackend`).

    It never follows redirects and never resolves a name; TLS verifies the URL's host.
    """

    def __init__(
        self,
        pins: Mapping[tuple[str, int], Sequence[str]],
        *,
        connect: Connector | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.backend = PinnedBackend(pins, connect)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context if ssl_context is not None else _default_ssl_context(),
            http1=True,
            http2=False,
            retries=0,
            network_backend=self.backend,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = await self._pool.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_PinnedResponseStream(cast(AsyncIterable[bytes], response.stream)),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        with _httpx_errors():
            await self._pool.aclose()


# ---------------------------------------------------------------------------------------------
# Bounded body decoding


class _Identity:
    def decode(self, data: bytes, limit: int) -> bytes:
        return data[:limit]

    def flush(self, limit: int) -> bytes:
        return b""


class _Inflate:
    """gzip or deflate (zlib-wrapped, or raw as some servers send it), at most `limit` bytes."""

    def __init__(self, wbits: int, raw_fallback: bool) -> None:
        self._inflater = zlib.decompressobj(wbits)
        self._raw_fallback = raw_fallback
        self._started = False

    def decode(self, data: bytes, limit: int) -> bytes:
        if self._inflater.eof or not data:
            return b""
        try:
            out = self._inflater.decompress(data, max(limit, 1))
        except zlib.error:
            if not self._raw_fallback or self._started:
                raise
            self._raw_fallback = False
            self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._inflater.decompress(data, max(limit, 1))
        self._started = True
        return out

    def flush(self, limit: int) -> bytes:
        return self._inflater.flush()[: max(limit, 0)]


def _decoder(content_encoding: str) -> _Identity | _Inflate:
    encoding = content_encoding.strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return _Inflate(zlib.MAX_WBITS | 16, raw_fallback=False)
    if encoding == "deflate":
        return _Inflate(zlib.MAX_WBITS, raw_fallback=True)
    return _Identity()  # identity, none, or an encoding we did not ask for: as it came


async def _read_body(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    stream = response.stream
    if not isinstance(stream, httpx.AsyncByteStream):  # pragma: no cover - our transport's
        raise FetchError(NETWORK_ERROR, "response has no async body")
    decoder = _decoder(response.headers.get("content-encoding", ""))
    body = bytearray()
    try:
        async for chunk in stream:
            body += decoder.decode(chunk, max_bytes - len(body) + 1)
            if len(body) > max_bytes:
                return bytes(body[:max_bytes]), True
        body += decoder.flush(max_bytes - len(body) + 1)
    except zlib.error as exc:
        raise FetchError(NETWORK_ERROR, f"undecodable response body: {exc}") from exc
    if len(body) > max_bytes:
        return bytes(body[:max_bytes]), True
    return bytes(body), False


# ---------------------------------------------------------------------------------------------
# The fetch


def _dedupe(addresses: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for address in addresses:
        seen.setdefault(str(address), None)
    return list(seen)


async def _vet(target: _Target, allow_private: bool, resolver: Resolver) -> list[str]:
    """The addresses this hop may connect to (resolving a name exactly once)."""
    shown = str(target.url)
    if target.literal is not None:
        refused = None if allow_private else check_address(target.literal)
        if refused:
            raise FetchError(
                BLOCKED_URL, f"{shown}: {target.literal} is a refused address ({refused})"
            )
        return [str(target.literal)]
    refused = None if allow_private else check_host_name(target.host)
    if refused:
        raise FetchError(BLOCKED_URL, f"{shown}: {target.host} is a refused name ({refused})")
    try:
        addresses = _dedupe(await resolver(target.host, target.port))
    except (OSError, UnicodeError) as exc:
        raise FetchError(NETWORK_ERROR, f"{shown}: cannot resolve {target.host}: {exc}") from exc
    if not addresses:
        raise FetchError(NETWORK_ERROR, f"{shown}: {target.host} has no address")
    for address in addresses:
        try:
            refused = check_address(address)
        except ValueError:
            raise FetchError(
                NETWORK_ERROR, f"{shown}: resolver gave {address!r} for {target.host}"
            ) from None
        if refused and not allow_private:
            raise FetchError(
                BLOCKED_URL, f"{shown}: {target.host} resolves to {address} ({refused})"
            )
    return addresses


def _request_headers(
    headers: Mapping[str, str] | Sequence[tuple[str, str]] | None,
) -> httpx.Headers:
    try:
        result = httpx.Headers(headers)
    except (TypeError, ValueError, UnicodeError) as exc:
        raise FetchError(INVALID_REQUEST, f"invalid headers: {exc}") from exc
    for raw_name, raw_value in result.raw:
        header = raw_name.decode("latin-1")
        if not _TOKEN_RE.match(header) or any(byte in raw_value for byte in b"\r\n\0"):
            raise FetchError(INVALID_REQUEST, f"invalid header {header!r}")
    for name in _OWNED_HEADERS:
        if name in result:
            del result[name]
    result.setdefault("user-agent", USER_AGENT)
    result.setdefault("accept", "*/*")
    result.setdefault("accept-encoding", ACCEPT_ENCODING)
    return result


def _next_target(current: _Target, location: str) -> _Target:
    """The target a Location header points at, joined to the current URL as browsers do."""
    return _target(urljoin(str(current.url), _backslashes_as_slashes(location.strip())))


def _redirected(
    status: int,
    method: str,
    body: bytes | None,
    headers: httpx.Headers,
    current: _Target,
    following: _Target,
) -> tuple[str, bytes | None, httpx.Headers]:
    headers = httpx.Headers(headers)
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, body = "GET", None
        for name in _BODY_HEADERS:
            if name in headers:
                del headers[name]
    if following.origin != current.origin:
        for name in _CREDENTIAL_HEADERS:
            if name in headers:
                del headers[name]
    return method, body, headers


def _timeouts(deadline: float) -> dict[str, float]:
    remaining = max(deadline - asyncio.get_running_loop().time(), 0.001)
    return {"connect": remaining, "read": remaining, "write": remaining, "pool": remaining}


def _transport_failure(exc: Exception, shown: str) -> FetchError:
    if isinstance(exc, httpx.TimeoutException):
        return FetchError(TIMEOUT, f"{shown}: {exc or type(exc).__name__}")
    if isinstance(exc, httpx.LocalProtocolError):
        return FetchError(INVALID_REQUEST, f"{shown}: {exc}")
    if isinstance(exc, httpx.UnsupportedProtocol):
        return FetchError(INVALID_URL, f"{shown}: {exc}")
    return FetchError(NETWORK_ERROR, f"{shown}: {exc or type(exc).__name__}")


async def _fetch(
    method: str,
    url: str | httpx.URL,
    headers: httpx.Headers,
    body: bytes | None,
    max_bytes: int,
    deadline: float,
    allow_private: bool,
    resolver: Resolver,
    connect: Connector | None,
    ssl_context: ssl.SSLContext | None,
    max_redirects: int,
    follow_redirects: bool,
) -> FetchResult:
    target = _target(url)
    first = str(target.url)
    redirects: list[str] = []
    while True:
        addresses = await _vet(target, allow_private, resolver)
        transport = PinnedTransport(
            {(target.host, target.port): addresses}, connect=connect, ssl_context=ssl_context
        )
        shown = str(target.url)
        location: str | None = None
        try:
            request = httpx.Request(
                method,
                target.url,
                headers=headers,
                content=body,
                extensions={"timeout": _timeouts(deadline)},
            )
            response = await transport.handle_async_request(request)
            try:
                status = response.status_code
                if follow_redirects and status in REDIRECT_STATUSES:
                    location = response.headers.get("location")
                if location is None:
                    content, truncated = await _read_body(response, max_bytes)
                    reason = response.extensions.get("reason_phrase", b"")
                    return FetchResult(
                        url=first,
                        final_url=shown,
                        status=status,
                        reason=reason.decode("latin-1") if isinstance(reason, bytes) else "",
                        headers=response.headers,
                        body=content,
                        truncated=truncated,
                        redirects=tuple(redirects),
                        peer_ip=transport.backend.connected[-1],
                    )
            finally:
                await response.aclose()
        except httpx.TransportError as exc:
            raise _transport_failure(exc, shown) from exc
        except OSError as exc:
            raise FetchError(NETWORK_ERROR, f"{shown}: {exc}") from exc
        finally:
            with contextlib.suppress(httpx.TransportError, OSError):
                await transport.aclose()
        if len(redirects) >= max_redirects:
            raise FetchError(
                TOO_MANY_REDIRECTS, f"{first}: more than {max_redirects} redirects (at {shown})"
            )
        following = _next_target(target, location)
        method, body, headers = _redirected(status, method, body, headers, target, following)
        redirects.append(str(following.url))
        target = following


def _shown(url: str | httpx.URL) -> str:
    """The URL for a message: normalised (no userinfo) when it parses."""
    try:
        return str(_target(url).url)
    except FetchError:
        return str(url)


async def _abandon(job: asyncio.Future[FetchResult]) -> None:
    """Cancel the request and give it a moment to close its connection."""
    job.cancel()
    await asyncio.wait({job}, timeout=CLOSE_GRACE_S)
    if job.done() and not job.cancelled():
        job.exception()  # retrieved: a late failure is not reported twice


async def safe_fetch(
    method: str,
    url: str | httpx.URL,
    *,
    headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    body: bytes | None = None,
    max_bytes: int,
    timeout_s: float,
    cancel: CancelSignal | None = None,
    env: Mapping[str, str] | None = None,
    resolver: Resolver | None = None,
    connect: Connector | None = None,
    ssl_context: ssl.SSLContext | None = None,
    max_redirects: int = MAX_REDIRECTS,
    follow_redirects: bool = True,
) -> FetchResult:
    """Send one request through the pinned, vetted path (module docstring); raise FetchError.

    `resolver` (default `default_resolver`) and `connect` (default `default_connect`, given a
    vetted address, never a name) are the seams for tests and embedders; `ssl_context` replaces
    the default verifying context (certifi). With `follow_redirects=False` a redirect response
    is returned as it is.
    """
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    if max_redirects < 0:
        raise ValueError(f"max_redirects must be >= 0, got {max_redirects}")
    verb = method.strip().upper()
    if not _TOKEN_RE.match(verb):
        raise FetchError(INVALID_REQUEST, f"invalid method {method!r}")
    environment = os.environ if env is None else env
    allow_private = environment.get(ALLOW_PRIVATE_ENV) == "1"
    request_headers = _request_headers(headers)
    if cancel is not None and cancel.cancelled:
        raise FetchError(CANCELLED, f"{_shown(url)}: cancelled before the request was sent")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    job = asyncio.ensure_future(
        _fetch(
            verb,
            url,
            request_headers,
            body,
            max_bytes,
            deadline,
            allow_private,
            resolver if resolver is not None else default_resolver,
            connect,
            ssl_context,
            max_redirects,
            follow_redirects,
        )
    )
    stop: asyncio.Future[None] = loop.create_future()

    def fire() -> None:
        if not stop.done():
            stop.set_result(None)

    def on_cancel() -> None:  # the token may fire from another thread
        loop.call_soon_threadsafe(fire)

    unsubscribe = cancel.on_cancel(on_cancel) if cancel is not None else None
    waiters: set[asyncio.Future[Any]] = {job, stop}
    try:
        await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        stop.cancel()
        await _abandon(job)
        raise
    finally:
        if unsubscribe is not None:
            unsubscribe()
    if job.done():
        stop.cancel()
        return job.result()
    await _abandon(job)
    if stop.done():
        reason = getattr(cancel, "reason", "") or "cancelled"
        raise FetchError(CANCELLED, f"{_shown(url)}: {reason}")
    stop.cancel()
    raise FetchError(TIMEOUT, f"{_shown(url)}: no complete response within {timeout_s:g} s")
