"""The Model protocol every provider implements, and the classified provider error."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from lich_core.vocabulary import CancelToken, Message, ModelResponse, ToolDefinition

ErrorKind = Literal[
    "auth", "rate_limit", "overflow", "bad_request", "network", "unknown", "response_too_large"
]
# Kinds whose message starts with the kind itself, a stable prefix callers may match on
# (`response_too_large: provider 'x' at URL: ...`); the others start with the provider.
PREFIXED_KINDS = ("response_too_large",)

# What an error message shows instead of a query value (a key may travel there).
HIDDEN = "***"

# Called with each piece of streamed assistant text as it arrives.
TextCallback = Callable[[str], None]


@dataclass(frozen=True)
class RetryNotice:
    """A failed attempt that will be followed by another one (same provider, or the next).

    `discarded_chars` is how much text the failed attempt had already streamed through
    `on_text`: a display showing streamed text must drop it, because the next attempt starts
    the answer again from the beginning.
    """

    provider: str
    attempt: int  # 1-based attempt on `provider` that failed
    max_attempts: int
    kind: str  # ErrorKind of the failure
    message: str  # one line
    action: Literal["retry", "failover"]
    delay_s: float  # wait before the next attempt (0 for a failover)
    next_provider: str
    discarded_chars: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "kind": self.kind,
            "message": self.message,
            "action": self.action,
            "delay_s": self.delay_s,
            "next_provider": self.next_provider,
            "discarded_chars": self.discarded_chars,
        }


RetryCallback = Callable[[RetryNotice], None]
# Called once a call's request is on the wire (before its answer is read).
SentCallback = Callable[[], None]


@dataclass(frozen=True)
class CallOptions:
    """What one model call takes besides the conversation; every part may be left out.

    - `on_text`: each piece of streamed assistant text as it arrives.
    - `cancel`: the call stops (asyncio.CancelledError) when this token is cancelled.
    - `on_retry`: a RetryNotice before every retry and failover (chains make them; a single model
      never retries, so it has none to give).
    - `on_sent`: called once the request is on the wire, before its answer is read, by a model
      whose `reports_sent` is True (the HTTP providers, chains of them). The caller of any other
      model must not wait for it.
    """

    on_text: TextCallback | None = None
    cancel: CancelToken | None = None
    on_retry: RetryCallback | None = None
    on_sent: SentCallback | None = None


NO_CALL_OPTIONS = CallOptions()


def display_url(url: str) -> str:
    """`url` as an error message may show it: without userinfo, and with each query value
    replaced by *** (`?key=***`), since a key may travel in either. Text that does not parse
    as a URL is shown as it is (it came from the config, not from a secret)."""
    if not any(mark in url for mark in "@?#"):
        return url  # nothing to hide: shown exactly as configured
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return url
    if not host:
        return url
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    query = "&".join(
        f"{quote(name, safe='')}={HIDDEN}"
        for name, _ in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


class ProviderError(Exception):
    """A classified failure. `str()` is one line: which provider, which URL, what to do."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        provider: str = "",
        url: str = "",
        status: int | None = None,
        retry_after_s: float | None = None,
        request: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.provider = provider
        self.url = url
        self.status = status
        self.retry_after_s = retry_after_s
        # "METHOD URL" of the request an HTTP status answered (query values hidden), so a
        # summary of several failures (ProviderChain) can still say where each one went.
        self.request = request

    def plain(self) -> str:
        """What failed, in words for the person at the keyboard: no config paths, no provider
        names from the config, no error kinds (str() keeps those, for the log and the model)."""
        address = display_url(self.url).split("?", 1)[0].split("#", 1)[0]
        server = f"the model server at {address}" if address else "the model server"
        status = f" (HTTP {self.status})" if self.status else ""
        if self.kind == "network":
            return f"Could not reach {server}{status}. Is it running, and is the address right?"
        if self.kind == "auth":
            return f"{server.capitalize()} refused the API key{status}."
        if self.kind == "rate_limit":
            return f"{server.capitalize()} is busy or rate-limited{status}; try again in a moment."
        if self.kind == "overflow":
            return "The conversation is too long for the model: start a new thread, or rewind."
        if self.kind == "bad_request":
            return f"{server.capitalize()} rejected the request{status}; the details say why."
        if self.kind == "response_too_large":
            return "The model's answer was larger than lich accepts, and was dropped."
        if self.status is not None and self.status >= 500:
            return f"{server.capitalize()} failed{status}."
        return f"{server.capitalize()} answered something that is not a model's answer{status}."

    def __str__(self) -> str:
        where = f"provider {self.provider!r}" if self.provider else "provider"
        if self.url:
            where += f" at {display_url(self.url)}"
        if self.kind in PREFIXED_KINDS:
            return f"{self.kind}: {where}: {self.args[0]}"
        return f"{where}: {self.kind}: {self.args[0]}"


@runtime_checkable
class Model(Protocol):
    """One chat model behind one provider (or a chain of them)."""

    name: str

    @property
    def reports_sent(self) -> bool:
        """Whether complete() calls options.on_sent once its request is on the wire (CallOptions)."""
        ...

    @property
    def stops_on_cancel(self) -> bool:
        """Whether complete() stops on options.cancel by itself, promptly: the agent loop then
        awaits it without racing it against the token."""
        ...

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        options: CallOptions = NO_CALL_OPTIONS,
    ) -> ModelResponse:
        """One model call. Streams text through `options.on_text` when the provider streams.

        Raises ProviderError (classified) on failure; asyncio.CancelledError when cancelled.
        """
        ...
