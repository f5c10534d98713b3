"""An in-memory Model for loop tests: each complete() plays the next scripted Turn.

Not a mock of the agent: it stands in for the provider (which has its own tests), so the loop's
behaviour can be checked deterministically and fast.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lich_core.agent.messages import Message, ModelResponse, ToolCall, Usage
from lich_core.providers.base import NO_CALL_OPTIONS, CallOptions, ProviderError
from lich_core.tools.types import CancelToken, ToolDefinition


@dataclass
class Turn:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    chunks: int = 1  # stream the text in this many pieces
    chunk_delay_s: float = 0.0
    error: Exception | None = None  # raised instead of answering
    block: bool = False  # never answer (until cancelled)
    ignore_cancel: bool = False  # with block: do not watch the token, only task cancellation
    usage: Usage = field(default_factory=lambda: Usage(10, 5))


def call(
    name: str, arguments: dict[str, Any] | None = None, *, id: str = "", raw: str = ""
) -> ToolCall:
    return ToolCall(id=id, name=name, arguments=dict(arguments or {}), raw_arguments=raw)


def tools_turn(*calls: ToolCall, text: str = "") -> Turn:
    return Turn(text=text, tool_calls=list(calls))


class ScriptedModel:
    # No wire to report on; the loop races it against the token (its tests cover that path).
    reports_sent = False
    stops_on_cancel = False

    def __init__(self, *turns: Turn, name: str = "scripted") -> None:
        self.name = name
        self.turns: deque[Turn] = deque(turns)
        self.calls: list[list[Message]] = []
        self.tools_seen: list[list[str]] = []
        self.cancel_seen: list[CancelToken | None] = []

    def script(self, *turns: Turn) -> None:
        self.turns.extend(turns)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        options: CallOptions = NO_CALL_OPTIONS,
    ) -> ModelResponse:
        on_text, cancel = options.on_text, options.cancel
        self.calls.append([Message.from_dict(m.to_dict()) for m in messages])
        self.tools_seen.append([t.name for t in tools])
        self.cancel_seen.append(cancel)
        turn = self.turns.popleft() if self.turns else Turn(text="(script exhausted)")
        if turn.error is not None:
            raise turn.error
        if turn.block:
            if cancel is not None and not turn.ignore_cancel:
                await cancel.wait()
                raise asyncio.CancelledError()
            await asyncio.Event().wait()
        pieces = _split(turn.text, turn.chunks)
        for index, piece in enumerate(pieces):
            if index and turn.chunk_delay_s:
                await asyncio.sleep(turn.chunk_delay_s)
            if cancel is not None and cancel.cancelled:
                raise asyncio.CancelledError()
            if on_text is not None:
                on_text(piece)
        message = Message(role="assistant", content=turn.text, tool_calls=list(turn.tool_calls))
        stop = "tool_calls" if turn.tool_calls else "stop"
        return ModelResponse(
            message=message, usage=turn.usage, stop_reason=stop, provider="script", model=self.name
        )


def provider_error(kind: str = "unknown", message: str = "boom") -> ProviderError:
    return ProviderError(kind, message, provider="script", url="http://127.0.0.1:1")  # type: ignore[arg-type]


def _split(text: str, chunks: int) -> list[str]:
    if not text:
        return []
    chunks = max(1, min(chunks, len(text)))
    size = -(-len(text) // chunks)
    return [text[i : i + size] for i in range(0, len(text), size)]
