"""The Model protocol every provider implements, and the classified provider error."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol, runtime_checkable

from lich_core.agent.messages import Message, ModelResponse
from lich_core.tools.types import CancelToken, ToolDefinition

ErrorKind = Literal["auth", "rate_limit", "overflow", "bad_request", "network", "unknown"]

# Called with each piece of streamed assistant text as it arrives.
TextCallback = Callable[[str], None]


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
