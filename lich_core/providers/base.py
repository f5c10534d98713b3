"""The Model protocol every provider implements, and the classified provider error."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from lich_core.vocabulary import CancelToken, Message, ModelResponse, ToolDefinition

ErrorKind = Literal[
    "auth", "rate_limit", "overflow", "bad_request", "network", "unknown", "response_too_large"
]
# Kinds whose message starts with the kind itself, a stable prefix callers may match on
# (`response_too_large: provider 'x' at URL: ...`); the others start with the provider.
PREFIXED_KINDS = ("response_too_large",)

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


def accepts_option(model: object, option: str) -> bool:
    """Whether `model.complete` takes the keyword `option`.

    Two optional extensions of the Model protocol, so simple models (tests, replay) need not
    know about them: `on_retry` (a RetryNotice before every retry and failover: ProviderChain
    and wrappers of it) and `on_sent` (called once the request is on the wire: the HTTP
    providers, and chains of them).
    """
    complete = getattr(model, "complete", None)
    if complete is None:
        return False
    try:
        return option in inspect.signature(complete).parameters
    except (TypeError, ValueError):
        return False


def accepts_retry_notices(model: object) -> bool:
    return accepts_option(model, "on_retry")


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
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.provider = provider
        self.url = url
        self.status = status
        self.retry_after_s = retry_after_s

    def __str__(self) -> str:
        where = f"provider {self.provider!r}" if self.provider else "provider"
        if self.url:
            where += f" at {self.url}"
        if self.kind in PREFIXED_KINDS:
            return f"{self.kind}: {where}: {self.args[0]}"
        return f"{where}: {self.kind}: {self.args[0]}"


@runtime_checkable
class Model(Protocol):
    """One chat model behind one provider (or a chain of them)."""

    name: str

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        *,
        on_text: TextCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelResponse:
        """One model call. Streams text through `on_text` when the provider streams.

        Raises ProviderError (classified) on failure; asyncio.CancelledError when cancelled.
        """
        ...
