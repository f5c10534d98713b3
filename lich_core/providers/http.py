"""The pooled HTTP clients and the plumbing every HTTP provider shares.

One httpx.AsyncClient per (process, event loop, lane): connections are reused across model calls,
and a client is never used from a loop it was not created on (pytest and the CLI may run several
loops in one process), nor inherited across fork. Two lanes, `chat` and `completion` (inline
completions, so they never wait for a chat's connection), built by one function (_new_client):
httpx's own transport, the same timeouts, limits and TLS roots, HTTP/2 for https endpoints when
the optional `h2` package is installed (HTTP/1.1 otherwise).

Limits (docs/providers.md "Limits"): a model that never stops, a line that never ends and a body
that never ends are all cut (`response_too_large:`), and a stream that only sends keepalives
times out after `timeout_ms` without progress, however often the keepalives come. These bounds
live here, above the transport:

- a compressed body (`Content-Encoding: gzip` or `deflate`) is decompressed here, piece by piece
  (`body_bytes`): never more than DECODED_PIECE_BYTES at once, the event loop given a turn
  between pieces, and cut (`response_too_large:`) once it expands past MAX_DECODE_RATIO times
  the compressed bytes it came from (beyond its first DECODE_RATIO_FREE_BYTES) or past
  MAX_DECODED_BYTES: a gzip bomb ends in milliseconds, never held whole in memory;
- the wait for the response's head is timed like a read of its body (ResponseLimits is armed
  before the request goes out), and a response may also have an overall deadline (inline
  completions: `timeout_ms`, default 5 s), after which it ends as a `network` timeout whatever
  the server does;
- bytes that came after a response's declared end never become the next answer: the connection
  they came on is closed (_close_unless_clean). An idle connection the server wrote to or
  closed meanwhile is not reused (httpcore checks that itself); over HTTP/2, a response left
  before its end closes its connection, so the server stops sending it.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import io
import json
import os
import re
import ssl
import weakref
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, Literal, TypeVar

import httpx

from lich_core.providers.base import (
    NO_CALL_OPTIONS,
    CallOptions,
    ProviderError,
    SentCallback,
    TextCallback,
)
from lich_core.providers.errors import (
    AUTH_HINT,
    CONNECT_HINT,
    error_from_exception,
    error_from_response,
    malformed,
    stream_error,
)
from lich_core.vocabulary import CancelToken, Message, ModelResponse, ToolDefinition, json_text

DEFAULT_CONNECT_TIMEOUT_S = 10.0
# Reads wait for the model to think between tokens; long, but not forever.
DEFAULT_READ_TIMEOUT_S = 300.0
DEFAULT_WRITE_TIMEOUT_S = 30.0
DEFAULT_POOL_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 20
MAX_KEEPALIVE_CONNECTIONS = 10
SSE_OTHER_FIELDS = ("id", "retry")
MAX_STRAY_LINES = 3
MALFORMED_PREVIEW_CHARS = 120

MIB = 1024 * 1024
# One response's content: streamed text, reasoning and tool-call arguments together, in UTF-8
# bytes. A model that never stops is cut here; the run ends with a `response_too_large:` error.
MAX_RESPONSE_TEXT_BYTES = 1 * MIB
# One line of a stream (an SSE line, and one SSE event's data lines together; an NDJSON line).
# Above the text cap, so one big chunk of an answer that fits still fits in a line.
MAX_STREAM_LINE_BYTES = 4 * MIB
# A whole response body read at once (`stream: false`).
MAX_RESPONSE_BODY_BYTES = 8 * MIB
# An HTTP error body: only a short detail of it is ever shown, the rest is not read.
MAX_ERROR_BODY_BYTES = 64 * 1024
# A compressed body is decompressed at most this much at a time, the event loop given a turn
# between pieces (a gzip bomb expands a thousandfold: one call would block the loop for seconds).
DECODED_PIECE_BYTES = 8 * 1024
# A compressed body may expand to at most this many times the compressed bytes it came from (past
# its first DECODE_RATIO_FREE_BYTES; text compresses tenfold, SSE framing a little more), and to
# at most MAX_DECODED_BYTES in all.
MAX_DECODE_RATIO = 100
DECODE_RATIO_FREE_BYTES = 64 * 1024
MAX_DECODED_BYTES = 64 * MIB
# What the clients ask for: the codings body_bytes decodes (httpx would add `br` and `zstd` when
# their packages are installed, and decode them whole).
ACCEPT_ENCODING = "gzip, deflate"
# After the final event the rest of the body is read, so the connection goes back to the pool;
# a server that goes on sending after it gets this many more lines, then the connection closes.
MAX_DRAIN_LINES = 64
TOO_LARGE_HINT = "the model may be stuck repeating itself; ask again, or for less at a time"
# Line breaks, a run of them at a time: the blank lines of a run mean no more than one does (to
# SSE and NDJSON), and a flood of them must not cost a Python step each.
_LINE_BREAKS = re.compile(rb"(?:\r\n|\r|\n)+")
# A timer may fire a hair before its deadline (the loop's clock resolution).
_TIMER_SLACK_S = 0.001

T = TypeVar("T")

ClientLane = Literal["chat", "completion"]
_clients: dict[
    ClientLane, weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
] = {
    "chat": weakref.WeakKeyDictionary(),
    "completion": weakref.WeakKeyDictionary(),
}
_clients_pid = os.getpid()


def default_timeout(read_timeout_s: float | None = None) -> httpx.Timeout:
    return httpx.Timeout(
        connect=DEFAULT_CONNECT_TIMEOUT_S,
        read=read_timeout_s if read_timeout_s is not None else DEFAULT_READ_TIMEOUT_S,
        write=DEFAULT_WRITE_TIMEOUT_S,
        pool=DEFAULT_POOL_TIMEOUT_S,
    )


@functools.cache
def http2_available() -> bool:
    """Whether the optional `h2` package is installed: then https endpoints may speak HTTP/2
    (negotiated with the server, HTTP/1.1 otherwise); plain http is always HTTP/1.1."""
    return importlib.util.find_spec("h2") is not None


@functools.cache
def _verifying_ssl_context() -> ssl.SSLContext:
    """certifi's roots, loaded once per process (~40 ms of CPU each time): the client is made per
    event loop, and a program that runs several loops (the CLI's, a test's) would pay it again."""
    return httpx.create_ssl_context(trust_env=False)


def get_client(lane: ClientLane = "chat") -> httpx.AsyncClient:
    """The shared client of `lane` for the running event loop (created on first use)."""
    global _clients_pid
    if os.getpid() != _clients_pid:
        # A forked child must not share the parent's sockets.
        for clients in _clients.values():
            clients.clear()
        _clients_pid = os.getpid()
    loop = asyncio.get_running_loop()
    client = _clients[lane].get(loop)
    if client is None or client.is_closed:
        client = _clients[lane][loop] = _new_client()
    return client


def _new_client() -> httpx.AsyncClient:
    """Every lane's client: httpx's own transport (httpcore), HTTP/2 where it can be."""
    # Provider URLs are explicit; an environment proxy would send localhost traffic astray.
    return httpx.AsyncClient(
        timeout=default_timeout(),
        limits=httpx.Limits(
            max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS
        ),
        trust_env=False,
        verify=_verifying_ssl_context(),
        http2=http2_available(),
    )


async def aclose_client() -> None:
    """Close the running loop's clients (call before the loop ends)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for clients in _clients.values():
        client = clients.pop(loop, None)
        if client is not None:
            await client.aclose()


async def run_cancellable(awaitable: Awaitable[T], cancel: CancelToken | None) -> T:
    """Await `awaitable` in the calling task, and cancel that task once when `cancel` fires.

    Raises asyncio.CancelledError if the token fires (or the caller is cancelled) first. See
    TokenCancelsTask, which this wraps around one awaitable.
    """
    if cancel is not None and cancel.cancelled:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise asyncio.CancelledError(cancel.reason or "cancelled")
    with TokenCancelsTask(cancel):
        return await awaitable


class TokenCancelsTask:
    """While inside `with`, the token firing cancels the calling task, once.

    No task of its own: a task switch on the way to the first streamed token costs more than
    the rest of the agent loop's work before the call (and a sync context manager costs less
    than a wrapping coroutine). The token cancels the task at most once, and not at all when
    something else is already cancelling it: a second cancellation landing while httpx closes a
    half-read stream would interrupt the close and leave the connection open, the server still
    streaming into it. On Python 3.11+ the token's own cancellation is taken back
    (`Task.uncancel`) on the way out, so the caller can tell it from a cancellation of its own
    task (`Task.cancelling()`). Entering with the token already fired raises CancelledError.
    """

    __slots__ = ("_cancel", "_loop", "_task", "_waiting", "_requested", "_unsubscribe")

    def __init__(self, cancel: CancelToken | None) -> None:
        self._cancel = cancel
        self._task: asyncio.Task[Any] | None = None
        self._waiting = False
        self._requested = False
        self._unsubscribe: Callable[[], None] | None = None

    def __enter__(self) -> TokenCancelsTask:
        cancel = self._cancel
        if cancel is None:
            return self
        if cancel.cancelled:
            raise asyncio.CancelledError(cancel.reason or "cancelled")
        # Not in a task (a bare coroutine driven by hand): nothing to cancel.
        self._task = asyncio.current_task()
        if self._task is not None:
            self._loop = asyncio.get_running_loop()
            self._waiting = True
            self._unsubscribe = cancel.on_cancel(self._on_cancel)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._waiting = False
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._requested and hasattr(self._task, "uncancel"):
            self._task.uncancel()  # type: ignore[union-attr]

    def _on_cancel(self) -> None:
        # The token may be fired from another thread (an editor request handler).
        self._loop.call_soon_threadsafe(self._cancel_once)

    def _cancel_once(self) -> None:
        task = self._task
        if (
            self._waiting
            and not self._requested
            and task is not None
            and not _being_cancelled(task)
        ):
            self._requested = True
            assert self._cancel is not None
            task.cancel(self._cancel.reason or "cancelled")


def _being_cancelled(task: asyncio.Task[Any]) -> bool:
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    return bool(cancelling()) if cancelling is not None else False


@asynccontextmanager
async def open_response(
    url: str | httpx.URL,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    timeout: httpx.Timeout,
    provider: str,
    base_url: str,
    connect_hint: str = CONNECT_HINT,
    auth_hint: str = AUTH_HINT,
    on_sent: SentCallback | None = None,
    lane: ClientLane = "chat",
    suggest_v1: bool = False,
) -> AsyncIterator[httpx.Response]:
    """POST `body` and yield the streaming response; HTTP and transport failures become ProviderError.

    Exceptions raised by the caller while reading the body (a dropped stream) are translated too.
    `on_sent` is called once the request is on the wire, before the response is read. An HTTP
    error names the URL requested; `suggest_v1` (an OpenAI-compatible wire) adds the /v1 hint to
    a 404 when `base_url` has no version (errors.missing_v1_hint).
    """
    client = get_client(lane)
    # json_text: json.dumps(ensure_ascii=False) without making a new encoder per request.
    encoded = json_text(body).encode("utf-8")
    request_headers = {
        "content-type": "application/json",
        "accept-encoding": ACCEPT_ENCODING,
        **headers,
    }
    content: bytes | _BodyThenNotify = encoded
    if on_sent is not None:
        # A streamed body with its length given (so not chunked): what follows its one chunk
        # runs when the transport asks for more, that is once the request has been written.
        request_headers["content-length"] = str(len(encoded))
        content = _BodyThenNotify(encoded, on_sent)
    try:
        async with client.stream(
            "POST", url, content=content, headers=request_headers, timeout=timeout
        ) as resp:
            if resp.status_code >= 400:

                def too_large(what: str) -> ProviderError:
                    return ProviderError(
                        "response_too_large", what, provider=provider, url=base_url
                    )

                raw = await read_at_most(resp, MAX_ERROR_BODY_BYTES, too_large)
                raise error_from_response(
                    resp.status_code,
                    raw.decode("utf-8", "replace"),
                    resp.headers,
                    provider=provider,
                    url=base_url,
                    auth_hint=auth_hint,
                    request_url=str(url),
                    suggest_v1=suggest_v1,
                )
            whole = False
            try:
                yield resp
                whole = resp.is_stream_consumed
            finally:
                await _close_unless_clean(resp, whole)
    except httpx.HTTPError as exc:
        raise error_from_exception(
            exc, provider=provider, url=base_url, connect_hint=connect_hint
        ) from None


async def _close_unless_clean(resp: httpx.Response, whole: bool) -> None:
    """Close the connection `resp` came on unless it may carry the next request cleanly.

    HTTP/1.1, a response read to its end: closed when more bytes came after that end (past its
    Content-Length, after its last chunk), the server's mistake or an attack; those bytes must
    never be read as the next request's answer. httpcore checks an idle connection's socket
    before reusing it (a server that wrote or closed meanwhile), but bytes that arrived in the
    same read as the response's end are already in its parser (h11), which would hand them out
    as the next response. Only httpcore sees that parser, so it is looked up through httpx's and
    httpcore's response streams (private names: tests/providers/test_http_lanes.py and
    tests/lsp/test_lsp_completion_hostile.py fail if that stops working). A response left
    before its end closes its connection already (httpcore).

    HTTP/2, a response left before its end (a superseded completion, a cancelled chat):
    httpcore forgets the stream without resetting it, so the server would go on generating;
    the connection is closed instead, which the server sees at once (other requests on it end
    as network errors).

    Closed through the response's public `network_stream`; httpcore never reuses it then.
    """
    if resp.http_version == "HTTP/2":
        dirty = not whole
    else:
        trailing = getattr(_http11_parser(resp), "trailing_data", None)
        dirty = whole and bool(trailing and trailing[0])
    network_stream = resp.extensions.get("network_stream")
    if dirty and network_stream is not None:
        # Best effort: a close that fails leaves nothing to reuse either, and must not hide
        # the error the caller may be leaving with.
        with suppress(Exception):
            await network_stream.aclose()


def _http11_parser(resp: httpx.Response) -> Any:
    """The h11 parser of the HTTP/1.1 connection `resp` came on, or None (HTTP/2, or other
    httpx/httpcore internals): httpx's response streams wrap httpcore's, down to the one that
    holds its connection."""
    stream: Any = resp.stream
    for _ in range(8):
        connection = getattr(stream, "_connection", None)
        if connection is not None:
            return getattr(connection, "_h11_state", None)
        stream = getattr(stream, "_stream", None) or getattr(stream, "_httpcore_stream", None)
        if stream is None:
            return None
    return None


class _BodyThenNotify:
    """A request body that calls `on_sent` (once) after the transport has written it.

    An iterable object rather than a generator, so httpx could send it a second time.
    """

    def __init__(self, body: bytes, on_sent: SentCallback) -> None:
        self.body = body
        self.on_sent: SentCallback | None = on_sent

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.body
        on_sent, self.on_sent = self.on_sent, None
        if on_sent is not None:
            on_sent()


async def read_at_most(
    resp: httpx.Response, limit: int, too_large: Callable[[str], Exception]
) -> bytes:
    """The body's first `limit` bytes, decoded (the rest is not read)."""
    data = bytearray()
    async for chunk in body_bytes(resp, too_large):
        data += chunk
        if len(data) >= limit:
            break
    return bytes(data[:limit])


async def body_bytes(
    resp: httpx.Response, too_large: Callable[[str], Exception]
) -> AsyncIterator[bytes]:
    """The response's body as it arrives, decoded: the one reader of bodies here.

    A `gzip` or `deflate` body is decompressed piece by piece (_Inflater), with a turn of the
    event loop between pieces, and cut with `too_large(what)` when it expands past the bounds
    (MAX_DECODE_RATIO, MAX_DECODED_BYTES). Other codings are passed through as they are, as
    httpx does (the parser then sees what they are), and are never asked for (ACCEPT_ENCODING).
    """
    codings = [
        value.strip().lower()
        for value in resp.headers.get_list("content-encoding", split_commas=True)
        if value.strip().lower() not in ("", "identity")
    ]
    if not codings or codings[0] not in _INFLATE_CODINGS:
        async for chunk in resp.aiter_raw():
            yield chunk
        return
    if len(codings) > 1:
        raise httpx.DecodingError(
            f"a body encoded more than once ({', '.join(codings)}) is not decoded",
            request=resp.request,
        )
    inflater = _Inflater(codings[0], too_large)
    async for chunk in resp.aiter_raw():
        for piece in inflater.pieces(chunk):
            yield piece
            await asyncio.sleep(0)  # the loop's turn: a bomb's pieces come without a wait


_INFLATE_CODINGS = ("gzip", "x-gzip", "deflate")


class _Inflater:
    """gzip or deflate, decompressed incrementally (zlib's `max_length`) and bounded: the
    pieces' total may not pass MAX_DECODED_BYTES, nor MAX_DECODE_RATIO times the compressed
    bytes consumed beyond DECODE_RATIO_FREE_BYTES. What follows the end of the compressed data
    is ignored, as httpx does."""

    def __init__(self, coding: str, too_large: Callable[[str], Exception]) -> None:
        self._deflate = coding == "deflate"
        # `deflate` is meant to be zlib-wrapped; some servers send it raw (tried on failure).
        wbits = zlib.MAX_WBITS if self._deflate else 16 + zlib.MAX_WBITS
        self._zlib = zlib.decompressobj(wbits)
        self._too_large = too_large
        self.consumed = 0  # compressed bytes decompressed so far
        self.produced = 0

    def pieces(self, data: bytes) -> Iterator[bytes]:
        while not self._zlib.eof:
            try:
                piece = self._zlib.decompress(data, DECODED_PIECE_BYTES)
            except zlib.error as err:
                if self._deflate and self.consumed == 0 and self.produced == 0:
                    self._deflate = False
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise httpx.DecodingError(f"the compressed body is corrupt: {err}") from None
            tail = self._zlib.unconsumed_tail
            self.consumed += len(data) - len(tail)
            data = tail
            if piece:
                self.produced += len(piece)
                self._check()
                yield piece
            if not data and len(piece) < DECODED_PIECE_BYTES:
                return  # all of `data` is out (a full piece may have more behind it)

    def _check(self) -> None:
        allowed = DECODE_RATIO_FREE_BYTES + MAX_DECODE_RATIO * self.consumed
        if self.produced > min(allowed, MAX_DECODED_BYTES):
            raise self._too_large(
                f"the compressed response expanded to {self.produced} bytes from {self.consumed} "
                f"(a body may expand {MAX_DECODE_RATIO} times, to {_mib(MAX_DECODED_BYTES)} at "
                "most); stopped reading it"
            )


class ResponseLimits:
    """The limits of one response: its content size, its lines, the idle timer and its deadline.

    The idle timer starts as the request goes out (`arm`: the wait for the response's head is
    timed like a read of its body) and is reset only by progress, which the wire parsers report:
    content (`content`, also counted against MAX_RESPONSE_TEXT_BYTES) or an event that moves the
    answer on (`progress`). Keepalive comments, pings and blank lines are not progress, so a
    stream of nothing but keepalives times out after `idle_s` like a silent one. `deadline_s`
    (None: none) bounds the whole exchange, counted from the first `arm`, progress or not: an
    inline completion is worth nothing later. On expiry of either the reading task is cancelled
    and `expired` is set; the caller turns that into a `network` timeout error (raise_if_idle).
    Between `arm` and `disarm` only: a generator reading for its caller is timed while it reads.
    """

    def __init__(self, model: HttpModel, *, deadline_s: float | None = None) -> None:
        self.model = model
        self.idle_s: float | None = model.timeout.read
        self.deadline_s = deadline_s
        self.content_bytes = 0
        self.expired = False
        self.finished = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._deadline = 0.0  # the idle timer's
        self._end: float | None = None  # the whole exchange's (deadline_s)
        self._ended = False  # the deadline, not the idle timer, expired

    def arm(self) -> None:
        if self.idle_s is None and self.deadline_s is None and self._end is None:
            return
        self._loop = loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        now = loop.time()
        if self.deadline_s is not None and self._end is None:
            self._end = now + self.deadline_s
        self._deadline = now + self.idle_s if self.idle_s is not None else float("inf")
        if self._next_check() != float("inf"):
            self._handle = loop.call_at(self._next_check(), self._check)

    def disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def progress(self) -> None:
        if self._loop is not None and self.idle_s is not None:
            # Cheap on purpose (called per streamed piece): the timer re-arms itself lazily.
            self._deadline = self._loop.time() + self.idle_s

    def content(self, piece: str) -> None:
        """Count `piece` of the answer; raise response_too_large before it would pass the cap."""
        size = len(piece) if piece.isascii() else len(piece.encode("utf-8", "surrogatepass"))
        if self.content_bytes + size > MAX_RESPONSE_TEXT_BYTES:
            raise self.too_large(
                f"the answer passed the {_mib(MAX_RESPONSE_TEXT_BYTES)} limit on one response "
                f"without ending; stopped reading it ({TOO_LARGE_HINT})"
            )
        self.content_bytes += size
        self.progress()

    def count_response(self, response: ModelResponse) -> None:
        """Count a whole (non-streamed) answer against the same cap."""
        self.content(response.message.content or "")
        for call in response.message.tool_calls:
            self.content(call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False))

    def finish(self, drain_s: float | None = None) -> None:
        """The final event came: what follows is only drained, no longer timed by the idle
        timer. With `drain_s` the drain gets that long at most (and the deadline still holds);
        the caller then ends quietly on expiry (took_back_expiry): its answer is whole."""
        self.finished = True
        self.disarm()
        if drain_s is not None:
            end = asyncio.get_running_loop().time() + drain_s
            self._end = end if self._end is None else min(self._end, end)

    def too_large(self, what: str) -> ProviderError:
        model = self.model
        return ProviderError("response_too_large", what, provider=model.name, url=model.base_url)

    def raise_if_idle(self) -> None:
        """In an `except CancelledError`: when our own idle timer or deadline cancelled the read
        (not the caller), raise the timeout instead, the timer's cancel taken back."""
        if self.took_back_expiry():
            raise self.idle_error() from None

    def took_back_expiry(self) -> bool:
        """In an `except CancelledError`: whether our own timer cancelled the read (its cancel
        is then taken back, so the task goes on)."""
        if not self.expired:
            return False
        task = asyncio.current_task()
        if task is not None and hasattr(task, "uncancel"):
            task.uncancel()
        return True

    def idle_error(self) -> ProviderError:
        model = self.model
        if self._ended:
            what = (
                f"timed out: no complete answer within {self.deadline_s:g} s (timeout_ms); "
                "stopped waiting for it"
            )
        else:
            what = (
                f"timed out waiting for the model: no progress for {self.idle_s:g} s (keepalives "
                "do not count); raise providers[].timeout_ms if it is just slow"
            )
        return ProviderError("network", what, provider=model.name, url=model.base_url)

    def _next_check(self) -> float:
        if self.finished:
            return self._end if self._end is not None else float("inf")
        return self._deadline if self._end is None else min(self._deadline, self._end)

    def _check(self) -> None:
        self._handle = None
        if self._loop is None or self._task is None or (self.finished and self._end is None):
            return
        now = self._loop.time() + _TIMER_SLACK_S
        if now >= self._next_check():
            self.expired = True
            self._ended = self._end is not None and now >= self._end
            self._task.cancel()
        else:
            self._handle = self._loop.call_at(self._next_check(), self._check)


def _mib(size: int) -> str:
    return f"{size // MIB} MiB" if size % MIB == 0 else f"{size} bytes"


async def stream_lines(resp: httpx.Response, limits: ResponseLimits) -> AsyncIterator[str]:
    """The body's lines (split at CRLF, LF or CR, as SSE allows), none above MAX_STREAM_LINE_BYTES.
    Blank lines in a row come as one (`_LINE_BREAKS`); the body is decoded by body_bytes.

    httpx's own line reader keeps a line that never ends in memory for as long as it grows.
    """
    partial = bytearray()
    pending_cr = False  # a chunk ended in CR: an LF starting the next one belongs to it
    drained = 0
    async for chunk in body_bytes(resp, limits.too_large):
        if pending_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        pending_cr = False
        start = 0
        for match in _LINE_BREAKS.finditer(chunk):
            end = match.start()
            if partial:
                partial += chunk[start:end]
                line = bytes(partial)
                partial.clear()
            else:
                line = chunk[start:end]
            if len(line) > MAX_STREAM_LINE_BYTES:
                raise _line_too_large(limits)
            start = match.end()
            breaks = match.group()
            lines = (line, b"") if len(breaks) > 1 and breaks != b"\r\n" else (line,)
            for each in lines:
                if limits.finished:
                    drained += 1
                    if drained > MAX_DRAIN_LINES:
                        return  # the connection closes instead of going back to the pool
                yield each.decode("utf-8", "replace")
        if chunk.endswith(b"\r"):
            pending_cr = True
        partial += chunk[start:]
        if len(partial) > MAX_STREAM_LINE_BYTES:
            raise _line_too_large(limits)
    if partial:
        yield partial.decode("utf-8", "replace")


def _line_too_large(limits: ResponseLimits) -> ProviderError:
    return limits.too_large(
        f"a stream line passed the {_mib(MAX_STREAM_LINE_BYTES)} limit without ending; stopped reading it"
    )


async def sse_events(
    resp: httpx.Response, stray: list[str] | None = None, *, limits: ResponseLimits
) -> AsyncIterator[tuple[str, str]]:
    """Server-sent events as (event name, data) pairs; multi-line data is joined with newlines.

    Lines that are not SSE fields are skipped; the first few go into `stray`, so a caller whose
    stream produced no events can show what the server sent instead (an HTML error page, say).
    Comments (`: keepalive`) and blank lines are skipped and are not progress. One event's data
    is bounded like one line (MAX_STREAM_LINE_BYTES).
    """
    event = ""
    data: list[str] = []
    size = 0
    async for line in stream_lines(resp, limits):
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data, size = "", [], 0
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            size += len(value) + 1
            if size > MAX_STREAM_LINE_BYTES:
                raise _line_too_large(limits)
            data.append(value)
        elif field == "event":
            event = value
        elif field not in SSE_OTHER_FIELDS and stray is not None and len(stray) < MAX_STRAY_LINES:
            stray.append(line)
    if data:
        yield event, "\n".join(data)


class TextBuffer:
    """Streamed text collected in one growing buffer (not a list of thousands of small strings)."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        self._empty = True

    def add(self, piece: str) -> None:
        self._buffer.write(piece)
        self._empty = False

    def __bool__(self) -> bool:
        """Whether anything was added (even an empty piece)."""
        return not self._empty

    def text(self) -> str:
        return self._buffer.getvalue()


def function_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """Tool definitions in the OpenAI "function" shape (also what Ollama takes)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def host_of(url: str) -> str:
    try:
        return httpx.URL(url).host
    except (httpx.InvalidURL, TypeError):
        return ""


def parse_tool_arguments(text: Any) -> tuple[dict[str, Any], str]:
    """Tool-call arguments as (object, raw). `raw` is set only when the text is not a JSON object,

    so a non-empty raw_arguments always means "the model sent arguments we could not read".
    """
    if text is None:
        return {}, ""
    if isinstance(text, Mapping):
        return dict(text), ""
    if not isinstance(text, str):
        return {}, json.dumps(text)
    if not text.strip():
        return {}, ""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return {}, text
    if not isinstance(value, dict):
        return {}, text
    return value, ""


class HttpModel:
    """One request/response cycle shared by the HTTP providers.

    A subclass says where to POST (`endpoint`), what to send (`request_body`, `request_headers`)
    and how to read the answer, whole (`parse_body`) or streamed (`read_stream`); this class
    owns the pooled client, error translation, timeouts and cancellation.
    """

    kind = "http"
    default_base_url = ""
    # Which shared client carries its requests (get_client).
    client_lane: ClientLane = "chat"
    # complete() stops soon after its `cancel` token fires (run_cancellable: the calling task is
    # cancelled once and the stream closed), so the agent loop need not race it a second time.
    stops_on_cancel = True
    # The request's body tells when it is on the wire (_BodyThenNotify).
    reports_sent = True
    # Speaks the OpenAI wire, served under /v1: a 404 from a base_url without it says so.
    suggest_v1_on_404 = False

    def __init__(
        self,
        *,
        model: str,
        name: str = "",
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_ms: int | None = None,
        stream: bool = True,
        max_tokens: int | None = None,
        connect_hint: str = CONNECT_HINT,
        auth_hint: str = AUTH_HINT,
    ) -> None:
        self.model = model
        self.name = name or self.kind
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.api_key = api_key
        self.extra_headers = dict(headers or {})
        self.timeout = default_timeout(timeout_ms / 1000 if timeout_ms else None)
        self.stream = stream
        self.max_tokens = max_tokens
        self.connect_hint = connect_hint
        self.auth_hint = auth_hint
        self._endpoint_text = ""
        self._endpoint_url: httpx.URL | None = None

    # --- what a provider defines ---

    def endpoint(self) -> str:
        raise NotImplementedError

    def request_body(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        raise NotImplementedError

    def request_headers(self) -> dict[str, str]:
        return {}

    def parse_body(self, raw: bytes) -> ModelResponse:
        raise NotImplementedError

    async def read_stream(
        self, resp: httpx.Response, on_text: TextCallback | None, limits: ResponseLimits
    ) -> ModelResponse:
        """Read a streamed answer; report content and progress to `limits` as it comes."""
        raise NotImplementedError

    # --- shared ---

    def endpoint_url(self) -> httpx.URL:
        """The endpoint, parsed once. httpx parses a URL given as text again on every request,
        which costs more than the rest of building the request (about 60 µs), and every model
        call, the first streamed token's included, waits for it."""
        text = self.endpoint()
        if self._endpoint_url is None or text != self._endpoint_text:
            self._endpoint_url = httpx.URL(text)
            self._endpoint_text = text
        return self._endpoint_url

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        options: CallOptions = NO_CALL_OPTIONS,
    ) -> ModelResponse:
        # One coroutine frame, no inner helper: every frame down to the HTTP client is resumed
        # at each read of the stream, the first token's included.
        on_text = options.on_text
        with TokenCancelsTask(options.cancel):
            body = self.request_body(list(messages), list(tools))
            limits = ResponseLimits(self)
            try:
                limits.arm()  # the response's head is waited for under the idle timer too
                async with self._open(
                    self.endpoint_url(), body, self.request_headers(), options.on_sent
                ) as resp:
                    limits.progress()
                    if not self.stream:
                        response = self.parse_body(await self._read_body(resp, limits))
                        limits.count_response(response)
                        return response
                    return await self.read_stream(resp, on_text, limits)
            except asyncio.CancelledError:
                limits.raise_if_idle()
                raise
            finally:
                limits.disarm()

    async def _read_body(self, resp: httpx.Response, limits: ResponseLimits) -> bytes:
        data = bytearray()
        async for chunk in body_bytes(resp, limits.too_large):
            limits.progress()  # timed per read, as the transport's read timeout is
            data += chunk
            if len(data) > MAX_RESPONSE_BODY_BYTES:
                raise limits.too_large(
                    f"the response body passed the {_mib(MAX_RESPONSE_BODY_BYTES)} limit; stopped reading it"
                )
        return bytes(data)

    def describe(self) -> str:
        return f"{self.kind} {self.model} @ {self.base_url}"

    def malformed(self, what: str) -> ProviderError:
        return malformed(what, provider=self.name, url=self.base_url)

    def error_in_body(self, payload: Mapping[str, Any]) -> ProviderError:
        return stream_error(payload, provider=self.name, url=self.base_url)

    def parse_json(self, raw: str | bytes, what: str) -> Any:
        """JSON from the server, or a one-line "malformed response" error showing what came."""
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, ValueError):
            raise self.malformed(f"{what} is not JSON: {preview(raw)}") from None

    def cut_short(self, events_seen: int, stray: Sequence[str] = ()) -> ProviderError:
        """The stream ended before its final event.

        With no event at all the server did not speak the protocol (a proxy's HTML page, a
        wrong base_url): that is a malformed response, not a network blip worth retrying.
        """
        if events_seen == 0:
            got = preview(stray[0]) if stray else "an empty body"
            return self.malformed(f"expected a stream of events, got {got}")
        return ProviderError(
            "network",
            "stream ended before the response was complete",
            provider=self.name,
            url=self.base_url,
        )

    def _open(
        self,
        url: str | httpx.URL,
        body: Mapping[str, Any],
        headers: Mapping[str, str],
        on_sent: SentCallback | None = None,
    ) -> AbstractAsyncContextManager[httpx.Response]:
        return open_response(
            url,
            body,
            {**headers, **self.extra_headers},
            timeout=self.timeout,
            provider=self.name,
            base_url=self.base_url,
            connect_hint=self.connect_hint,
            auth_hint=self.auth_hint,
            on_sent=on_sent,
            lane=self.client_lane,
            suggest_v1=self.suggest_v1_on_404,
        )


def preview(raw: str | bytes) -> str:
    """A short, quoted, single-line sample of what a server sent."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    if len(text) > MALFORMED_PREVIEW_CHARS:
        text = text[:MALFORMED_PREVIEW_CHARS] + "..."
    return repr(text)
