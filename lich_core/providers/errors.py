"""Classify provider failures into ErrorKind so the chain knows whether to retry, fail over or stop.

Policy (docs/providers.md):
- 401/403 -> auth; 429 -> rate_limit (Retry-After parsed); 529 (Anthropic "overloaded") -> rate_limit;
- 413, or any 4xx whose message talks about the context length -> overflow;
- 400/404/422 and other 4xx -> bad_request; 408 -> network;
- 5xx -> unknown (a server fault: fail over rather than hammer it);
- connection errors, timeouts, streams that break or end early -> network;
- a body that is not the JSON we expect -> unknown, with "malformed response" in the message.

An HTTP error names the request (`HTTP 404 from POST http://host/v1/chat/completions: ...`):
the base URL alone does not say which path the provider added to it, and a wrong path is the
usual cause of a 404. The URL shown has no userinfo and no query values, since a key may travel
in either. A 404 from an OpenAI-compatible server whose base_url has no version segment also
says to try `/v1`: those servers serve under it, and a base_url written without it is the most
common misconfiguration.

A connection that never got going says which step failed, since each has its own remedy: the
host name did not resolve (DNS: offline, or a wrong host), nothing listens at the address
(refused: the server is not running, or the port is wrong), the TLS handshake failed, or the
connection timed out. Only "refused" and "timed out" carry the caller's connect hint ("is the
server running? set ..."): for a DNS or TLS failure it would point at the wrong thing.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import time
from collections.abc import Iterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx

from lich_core.providers.base import HIDDEN, ErrorKind, ProviderError, display_url

MAX_ERROR_DETAIL_CHARS = 200

OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "input is too long",
    "reduce the length",
)

CONNECT_HINT = "is the server running? set providers[].base_url or LICH_BASE_URL"
AUTH_HINT = "check the API key (providers[].api_key_env, OPENAI_API_KEY or ANTHROPIC_API_KEY)"
# Shorter query values (`?stream=1`) are not worth hiding in a server's error text, and
# replacing them there would garble it.
MIN_SECRET_CHARS = 6
# A path segment naming an API version (v1, v1beta, v4): a base_url with one already chose its
# version, so suggesting /v1 on top of it (Gemini's /v1beta/openai, Zhipu's /v4) would mislead.
_VERSION_SEGMENT = re.compile(r"v\d+[a-z0-9]*", re.IGNORECASE)


def parse_retry_after(value: str | None, now_s: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date; None if absent/bad."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    now_s = time.time() if now_s is None else now_s
    return max(0.0, when.timestamp() - now_s)


def error_detail(body: str) -> str:
    """The human part of an error body: OpenAI, Anthropic and Ollama shapes, FastAPI's
    `{"detail": ...}` (vLLM's 404 for a path it does not serve), else the raw text."""
    text = body.strip()
    try:
        data: Any = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        data = None
    if isinstance(data, dict):
        err = data.get("error", data.get("message", data.get("detail")))
        if isinstance(err, dict):
            err = err.get("message") or err.get("type") or json.dumps(err)
        if isinstance(err, str) and err:
            text = err
    return shorten(text)


def shorten(text: str, limit: int = MAX_ERROR_DETAIL_CHARS) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."


def is_overflow_message(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in OVERFLOW_MARKERS)


def classify_status(status: int, detail: str = "") -> ErrorKind:
    if status in (401, 403):
        return "auth"
    if status in (429, 529):
        return "rate_limit"
    if status == 408:
        return "network"
    if status == 413 or (400 <= status < 500 and is_overflow_message(detail)):
        return "overflow"
    if 400 <= status < 500:
        return "bad_request"
    return "unknown"


def _url_secrets(url: str) -> list[str]:
    """What display_url hides of `url` that is long enough to be a secret: query values and
    the userinfo password."""
    if not any(mark in url for mark in "@?"):
        return []
    try:
        parts = urlsplit(url)
        found = [value for _, value in parse_qsl(parts.query)]
        found.append(parts.password or "")
    except ValueError:
        return []
    return [value for value in found if len(value) >= MIN_SECRET_CHARS]


def missing_v1_hint(base_url: str) -> str:
    """What to try when an OpenAI-compatible server answered 404 and `base_url` has no /v1 (nor
    any other version segment); "" when it has one, or does not parse."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return ""
    segments = [segment for segment in parts.path.split("/") if segment]
    if any(_VERSION_SEGMENT.fullmatch(segment) for segment in segments):
        return ""
    shown = display_url(base_url)
    suggested = display_url(urlunsplit(parts._replace(path="/".join(["", *segments, "v1"]))))
    return (
        f"the base_url {shown} has no /v1: OpenAI-compatible servers usually serve under /v1, "
        f"try {suggested}"
    )


def error_from_response(
    status: int,
    body: str,
    headers: Mapping[str, str] | None = None,
    *,
    provider: str = "",
    url: str = "",
    auth_hint: str = AUTH_HINT,
    method: str = "POST",
    request_url: str = "",
    suggest_v1: bool = False,
) -> ProviderError:
    """An HTTP error status as a classified ProviderError.

    `url` is the provider's base_url (the error's `at URL`); `request_url` the URL requested,
    named in the message with `method`. `suggest_v1`: the provider speaks the OpenAI wire, so a
    404 with no version in `url` gets the missing_v1_hint.
    """
    for secret in _url_secrets(request_url):
        # A server may echo the request line in its error page (`unknown path /v1?key=...`);
        # hidden before the detail is cut short, which could leave a piece of it.
        body = body.replace(secret, HIDDEN)
    detail = error_detail(body) or "(empty body)"
    kind = classify_status(status, detail)
    retry_after = (
        parse_retry_after((headers or {}).get("retry-after")) if headers is not None else None
    )
    request = f"{method} {display_url(request_url)}" if request_url else ""
    message = f"HTTP {status} from {request}: {detail}" if request else f"HTTP {status}: {detail}"
    if kind == "auth":
        message += f"; {auth_hint}"
    if status == 404 and suggest_v1:
        hint = missing_v1_hint(url)
        if hint:
            message += f" ({hint})"
    return ProviderError(
        kind,
        message,
        provider=provider,
        url=url,
        status=status,
        retry_after_s=retry_after,
        request=request,
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what it was raised from (httpx wraps httpcore, which wraps the OS error)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _address(url: str) -> str:
    """host:port of a base URL, for messages ("api.openai.com:443")."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return url
    if not host:
        return url or "the provider"
    port = port or (443 if parts.scheme == "https" else 80)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or url
    except ValueError:
        return url


def connect_failure_message(exc: BaseException, url: str, connect_hint: str = CONNECT_HINT) -> str:
    """What went wrong while connecting, by the OS error underneath httpx's ConnectError."""
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror):
            return (
                f"cannot connect: DNS lookup of {_host(url)} failed ({shorten(str(cause))}): "
                "this machine may be offline, or the host name in the base URL is wrong"
            )
        if isinstance(cause, ConnectionRefusedError):
            return f"cannot connect: {_address(url)} refused the connection (nothing listens there): {connect_hint}"
        if isinstance(cause, ssl.SSLError):
            return f"cannot connect: the TLS handshake with {_address(url)} failed ({shorten(str(cause))})"
    # The OS error says most ("Network is unreachable"); httpx's own text is often generic.
    os_errors = [cause for cause in _causes(exc) if isinstance(cause, OSError) and cause.errno]
    detail = shorten(str(os_errors[-1] if os_errors else exc)) or type(exc).__name__
    return f"cannot connect to {_address(url)} ({detail}): {connect_hint}"


def error_from_exception(
    exc: BaseException, *, provider: str = "", url: str = "", connect_hint: str = CONNECT_HINT
) -> ProviderError:
    """An httpx transport failure as a one-line network error."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, httpx.ConnectTimeout):
        message = f"connection timed out ({_address(url)}): {connect_hint}"
    elif isinstance(exc, httpx.ConnectError):
        message = connect_failure_message(exc, url, connect_hint)
    elif isinstance(exc, httpx.TimeoutException):
        message = f"timed out waiting for the model ({type(exc).__name__}); raise providers[].timeout_ms if it is just slow"
    elif isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        message = f"connection dropped mid-response: {shorten(str(exc)) or type(exc).__name__}"
    elif isinstance(exc, httpx.UnsupportedProtocol):
        return ProviderError(
            "bad_request", f"bad base_url: {shorten(str(exc))}", provider=provider, url=url
        )
    else:
        message = f"{type(exc).__name__}: {shorten(str(exc))}"
    return ProviderError("network", message, provider=provider, url=url)


def malformed(what: str, *, provider: str = "", url: str = "") -> ProviderError:
    return ProviderError(
        "unknown", f"malformed response: {shorten(what)}", provider=provider, url=url
    )


def stream_error(payload: Mapping[str, Any], *, provider: str = "", url: str = "") -> ProviderError:
    """An error object sent inside a 200 stream (OpenAI `{"error":...}`, Anthropic `event: error`)."""
    err = payload.get("error", payload)
    kind_name = ""
    if isinstance(err, Mapping):
        kind_name = str(err.get("type") or err.get("code") or "")
        detail = str(err.get("message") or kind_name or json.dumps(dict(err)))
    else:
        detail = str(err)
    kind: ErrorKind = "unknown"
    if "rate_limit" in kind_name or "overloaded" in kind_name:
        kind = "rate_limit"
    elif "authentication" in kind_name or "permission" in kind_name:
        kind = "auth"
    elif is_overflow_message(detail):
        kind = "overflow"
    elif "invalid_request" in kind_name:
        kind = "bad_request"
    return ProviderError(kind, f"error in stream: {shorten(detail)}", provider=provider, url=url)
