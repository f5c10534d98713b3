"""Replay a recorded conversation, and record one.

The format is JSONL, one model turn per line: `{"message": Message.to_dict(), "usage": {...}}`.
Turns are played in order whatever the request says, so a replay is deterministic; running out
is a `bad_request` ProviderError ("replay exhausted"). Blank lines and lines without a "message"
are skipped, so a file may carry comments as `{"note": ...}` lines.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lich_core.providers.base import (
    NO_CALL_OPTIONS,
    CallOptions,
    Model,
    ProviderError,
)
from lich_core.vocabulary import Message, ModelResponse, ToolDefinition, Usage


def response_to_record(response: ModelResponse) -> dict[str, Any]:
    record: dict[str, Any] = {
        "message": response.message.to_dict(),
        "usage": response.usage.to_dict(),
    }
    if response.stop_reason != "stop":
        record["stop_reason"] = response.stop_reason
    return record


def response_from_record(record: dict[str, Any]) -> ModelResponse:
    message = Message.from_dict({"role": "assistant", **record["message"]})
    stop = record.get("stop_reason") or ("tool_calls" if message.tool_calls else "stop")
    return ModelResponse(
        message=message,
        usage=Usage.from_dict(record.get("usage")),
        stop_reason=stop,
    )


def record_turn(path: str | os.PathLike[str], response: ModelResponse) -> None:
    """Append one model turn to a replay file (parent folders are created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(response_to_record(response), ensure_ascii=False)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def load_replay(path: str | os.PathLike[str], provider: str = "replay") -> list[ModelResponse]:
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
    except OSError as err:
        raise ProviderError(
            "bad_request",
            f"cannot read replay file: {err.strerror}",
            provider=provider,
            url=str(target),
        ) from None
    turns: list[ModelResponse] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or "message" not in record:
                continue
            turns.append(response_from_record(record))
        except (json.JSONDecodeError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise ProviderError(
                "bad_request",
                f"line {number} is not a recorded turn ({err})",
                provider=provider,
                url=str(target),
            ) from None
    return turns


class ReplayModel:
    """Plays the turns of a replay file in order; streams each turn's text as one piece."""

    kind = "replay"
    # complete() checks the token first and never waits on anything after, so the loop can
    # await it directly (no race task per turn).
    stops_on_cancel = True
    reports_sent = False  # no wire

    def __init__(
        self, path: str | os.PathLike[str], *, name: str = "replay", model: str = "replay"
    ) -> None:
        self.path = str(path)
        self.name = name
        self.model = model
        self._turns: list[ModelResponse] | None = None
        self._next = 0

    def describe(self) -> str:
        return f"replay {self.path}"

    @property
    def remaining(self) -> int:
        return len(self._load()) - self._next

    def _load(self) -> list[ModelResponse]:
        if self._turns is None:
            self._turns = load_replay(self.path, self.name)
        return self._turns

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        options: CallOptions = NO_CALL_OPTIONS,
    ) -> ModelResponse:
        cancel = options.cancel
        if cancel is not None and cancel.cancelled:
            raise asyncio.CancelledError(cancel.reason or "cancelled")
        turns = self._load()
        if self._next >= len(turns):
            raise ProviderError(
                "bad_request",
                f"replay exhausted after {len(turns)} turns",
                provider=self.name,
                url=self.path,
            )
        # Each recorded turn is played once, so the caller may have (and mutate) the loaded one:
        # no copy per turn.
        response = turns[self._next]
        self._next += 1
        response.provider = self.name
        response.model = self.model
        if options.on_text is not None and response.message.content:
            options.on_text(response.message.content)
        return response


class RecordingModel:
    """Wraps any Model and appends each successful turn to a replay file (`lich --record FILE`)."""

    def __init__(self, inner: Model, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = str(path)
        self.name = inner.name

    def describe(self) -> str:
        describe = getattr(self.inner, "describe", None)
        return f"{describe() if describe else self.name} (recording to {self.path})"

    @property
    def reports_sent(self) -> bool:
        return self.inner.reports_sent

    @property
    def stops_on_cancel(self) -> bool:
        return self.inner.stops_on_cancel

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        options: CallOptions = NO_CALL_OPTIONS,
    ) -> ModelResponse:
        response = await self.inner.complete(messages, tools, options)
        record_turn(self.path, response)
        return response
