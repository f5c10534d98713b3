"""The pooled HTTP client and the plumbing every HTTP provider shares.

One httpx.AsyncClient per (process, event loop): connections are reused across model calls, and a
client is never used from a loop it was not created on (pytest and the CLI may run several loops
in one process), nor inherited across fork.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import httpx

from lich_core.agent.messages import Message, ModelResponse
from lich_core.providers.base import ProviderError, TextCallback
from lich_core.providers.errors import (
    AUTH_HINT,
    CONNECT_HINT,
    error_from_exception,
    error_from_response,
    malformed,
    stream_error,
)
from lich_core.tools.types import CancelToken, ToolDefinition

DEFAULT_CONNECT_TIMEOUT_S = 10.0
# Reads wait for the model to think between tokens; long, but not forever.
DEFAULT_READ_TIMEOUT_S = 300.0
DEFAULT_WRITE_TIMEOUT_S = 30.0
DEFAULT_POOL_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 20
MAX_KEEPALIVE_CONNECTIONS = 10
# How long a cancelled request may take to close its connection before the caller moves on.
CANCEL_UNWIND_S = 2.0
SSE_OTHER_FIELDS = ("id", "retry")
MAX_STRAY_LINES = 3
MALFORMED_PREVIEW_CHARS = 120

T = TypeVar("T")

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)
_clients_pid = os.getpid()


def default_timeout(read_timeout_s: float | None = None) -> httpx.Timeout:
    return httpx.Timeout(
        connect=DEFAULT_CONNECT_TIMEOUT_S,
        read=read_timeout_s if read_timeout_s is not None else DEFAULT_READ_TIMEOUT_S,
        write=DEFAULT_WRITE_TIMEOUT_S,
        pool=DEFAULT_POOL_TIMEOUT_S,
    )


def get_client() -> httpx.AsyncClient:
    """The shared client for the running event loop (created on first use)."""
    global _clients_pid
    if os.getpid() != _clients_pid:
        # A forked child must not share the parent's sockets.
        _clients.clear()
        _clients_pid = os.getpid()
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            timeout=default_timeout(),
            limits=httpx.Limits(
                max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS
            ),
            # Provider URLs are explicit; an environment proxy would send localhost traffic astray.
            trust_env=False,
        )
        _clients[loop] = client
    return client


async def aclose_client() -> None:
    """Close the running loop's client (call before the loop ends)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    client = _clients.pop(loop, None)
    if client is not None:
        await client.aclose()


async def run_cancellable(awaitable: Awaitable[T], cancel: CancelToken | None) -> T:
    """Await `awaitable` as its own task and cancel that task when `cancel` fires.

    Raises asyncio.CancelledError if the token fires (or the caller is cancelled) first. The
    task is cancelled exactly once and given CANCEL_UNWIND_S to unwind before this returns: a
    second cancellation landing while httpx closes a half-read stream would interrupt the
    close and leave the connection open, the server still streaming into it.
    """
    if cancel is None:
        return await awaitable
    if cancel.cancelled:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise asyncio.CancelledError(cancel.reason or "cancelled")
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(awaitable)
    requested = False

    def cancel_once() -> None:
        nonlocal requested
        if not requested and not task.done():
            requested = True
            task.cancel()

    def on_cancel() -> None:
        # The token may be fired from another thread (an editor request handler).
        loop.call_soon_threadsafe(cancel_once)

    unsubscribe = cancel.on_cancel(on_cancel)
    try:
        # Shielded so that cancelling the caller does not cancel `task` behind cancel_once's back.
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        cancel_once()
        await asyncio.wait({task}, timeout=CANCEL_UNWIND_S)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it as never retrieved
        raise
    finally:
        unsubscribe()


@asynccontextmanager
async def open_response(
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    timeout: httpx.Timeout,
    provider: str,
    base_url: str,
    connect_hint: str = CONNECT_HINT,
    auth_hint: str = AUTH_HINT,
) -> AsyncIterator[httpx.Response]:
    """POST `body` and yield the streaming response; HTTP and transport failures become ProviderError.

    Exceptions raised by the caller while reading the body (a dropped stream) are translated too.
    """
    client = get_client()
    content = json.dumps(body, ensure_ascii=False).encode("utf-8")
    request_headers = {"content-type": "application/json", **headers}
    try:
        async with client.stream(
            "POST", url, content=content, headers=request_headers, timeout=timeout
        ) as resp:
            if resp.status_code >= 400:
                raw = await resp.aread()
                raise error_from_response(
                    resp.status_code,
                    raw.decode("utf-8", "replace"),
                    resp.headers,
                    provider=provider,
                    url=base_url,
                    auth_hint=auth_hint,
                )
            yield resp
    except httpx.HTTPError as exc:
        raise error_from_exception(
            exc, provider=provider, url=base_url, connect_hint=connect_hint
        ) from None


async def sse_events(
    resp: httpx.Response, stray: list[str] | None = None
) -> AsyncIterator[tuple[str, str]]:
    """Server-sent events as (event name, data) pairs; multi-line data is joined with newlines.

    Lines that are not SSE fields are skipped; the first few go into `stray`, so a caller whose
    stream produced no events can show what the server sent instead (an HTML error page, say).
    """
    event = ""
    data: list[str] = []
    async for line in resp.aiter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
        elif field not in SSE_OTHER_FIELDS and stray is not None and len(stray) < MAX_STRAY_LINES:
            stray.append(line)
    if data:
        yield event, "\n".join(data)


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
        self, resp: httpx.Response, on_text: TextCallback | None
    ) -> ModelResponse:
        raise NotImplementedError

    # --- shared ---

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        *,
        on_text: TextCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelResponse:
        return await run_cancellable(self._complete(list(messages), list(tools), on_text), cancel)

    async def _complete(
        self, messages: list[Message], tools: list[ToolDefinition], on_text: TextCallback | None
    ) -> ModelResponse:
        body = self.request_body(messages, tools)
        async with self._open(self.endpoint(), body, self.request_headers()) as resp:
            if not self.stream:
                return self.parse_body(await resp.aread())
            return await self.read_stream(resp, on_text)

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
        self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]
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
        )


def preview(raw: str | bytes) -> str:
    """A short, quoted, single-line sample of what a server sent."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    if len(text) > MALFORMED_PREVIEW_CHARS:
        text = text[:MALFORMED_PREVIEW_CHARS] + "..."
    return repr(text)
