"""The core's shared vocabulary: the bottom module every other part of lich_core builds on.

Conversation messages (`Message`, `ToolCall`, `Usage`, `ModelResponse`), what a provider sees of
a tool (`ToolDefinition`), what a tool returns (`ToolResult`, `format_tool_result`), cancellation
(`CancelToken`) and the minimal line-range edit (`LineReplacement`).

Layering (enforced by tests/core/test_layers.py): this module imports only the standard library
and `lich_core.errors`. Providers import only this module, `lich_core.errors`, each other and
httpx; the hashline engine imports nothing from lich_core but this module. The old locations
(`lich_core.agent.messages`, `lich_core.tools.types`, `lich_core.workspace`) re-export these names
for tests and plugins; code inside lich_core and lich_lsp imports them from here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

# Re-exported so the pure hashline engine can raise prefixed, model-readable errors while
# importing nothing from lich_core but this module.
from lich_core.errors import ToolError

__all__ = [
    "CancelToken",
    "JsonSchemaObject",
    "LineReplacement",
    "Message",
    "ModelResponse",
    "Role",
    "ToolCall",
    "ToolDefinition",
    "ToolError",
    "ToolResult",
    "Usage",
    "format_tool_result",
    "json_text",
]

# ---------------------------------------------------------------------------------------------
# Conversation messages. Provider-neutral: providers translate them to and from their wire format.

Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class ToolCall:
    id: str
    name: str
    # Parsed arguments; a provider that got unparseable JSON puts {} here and keeps the raw text.
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "raw_arguments": self.raw_arguments,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(
            id=str(data.get("id", "")),
            name=str(data.get("name", "")),
            arguments=dict(data.get("arguments") or {}),
            raw_arguments=str(data.get("raw_arguments", "")),
        )


@dataclass
class Message:
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    # For role "tool": which call this answers, and the tool's name.
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            role=data["role"],
            content=str(data.get("content") or ""),
            tool_calls=[ToolCall.from_dict(c) for c in data.get("tool_calls") or []],
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )


@dataclass
class Usage:
    """Tokens one call (or a run, summed) cost, normalised across providers.

    `input_tokens` is the whole prompt, cached or not (Anthropic reports its uncached part only;
    its provider adds the cache figures back), so `cache_read_tokens / input_tokens` is the share
    served from the provider's prompt cache. `cache_write_tokens` is the part written to the cache
    (Anthropic bills it above the plain input price); both stay 0 for a provider that reports none.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens

    def to_dict(self) -> dict[str, int]:
        data = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        # Left out when zero so the shape stays what it was for providers without a cache.
        if self.cache_read_tokens:
            data["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens:
            data["cache_write_tokens"] = self.cache_write_tokens
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        """Read `to_dict()`'s shape back; anything missing or not a number counts as 0."""
        if not isinstance(data, dict):
            return cls()

        def count(key: str) -> int:
            try:
                return max(0, int(data.get(key) or 0))
            except (TypeError, ValueError):
                return 0

        return cls(
            count("input_tokens"),
            count("output_tokens"),
            count("cache_read_tokens"),
            count("cache_write_tokens"),
        )


@dataclass
class ModelResponse:
    message: Message  # role "assistant"
    usage: Usage = field(default_factory=Usage)
    # Why the model stopped: "stop", "tool_calls", "length", ... (provider's word, normalised).
    stop_reason: str = "stop"
    # Which provider/model answered (a chain fills this in).
    provider: str = ""
    model: str = ""


# ---------------------------------------------------------------------------------------------
# Tools as the model and the agent see them.

JsonSchemaObject = dict[str, Any]


@dataclass(frozen=True)
class ToolDefinition:
    """What a provider sees of a tool."""

    name: str
    description: str
    parameters: JsonSchemaObject

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass
class ToolResult:
    ok: bool
    output: str = ""
    error: str | None = None
    # Structured extras that never reach the model: prior content for a diff, exit codes, ...
    details: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "output": self.output, "error": self.error}


def _json_text_function() -> Callable[[Any], str]:
    encoder = json.JSONEncoder(ensure_ascii=False, check_circular=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator (another interpreter)
        return encoder.encode
    try:
        # The arguments JSONEncoder.iterencode passes, in its order (CPython 3.10 to 3.13).
        iterencode = make(
            None,
            encoder.default,
            json.encoder.encode_basestring,
            None,
            ": ",
            ", ",
            False,
            False,
            True,
        )
    except TypeError:  # a make_encoder that takes other arguments
        return encoder.encode
    join = "".join

    def text(value: Any) -> str:
        return join(iterencode(value, 0))

    probe = {"a": [1.5, "é\n\u2028", None, True, float("inf")], "b": {"c": 0}}
    return text if text(probe) == encoder.encode(probe) else encoder.encode


# json.dumps(value, ensure_ascii=False), less its per-call setup: dumps (and a reused
# JSONEncoder's encode) makes a new C encoder on every call, most of the cost of encoding a
# small record, and the session log encodes one per message. No circular-reference check: a
# cycle raises RecursionError instead of ValueError (messages are trees of JSON values).
json_text: Callable[[Any], str] = _json_text_function()


def format_tool_result(result: ToolResult) -> str:
    """Tool-message content: raw output on success, JSON on error (the model can parse it)."""
    if result.ok:
        return result.output
    return json_text(result.to_json_dict())


class CancelToken:
    """A cancellation flag that can be awaited and chained (the seed's AbortSignal).

    `child()` makes a token cancelled whenever this one is, so the executor can merge a caller's
    cancellation with its own deadline without touching the caller's token.
    """

    def __init__(self) -> None:
        self._cancelled = False
        self.reason: str = ""
        self._callbacks: list[Callable[[], None]] = []
        self._event: asyncio.Event | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str = "cancelled") -> None:
        if self._cancelled:
            return
        self._cancelled = True
        self.reason = reason
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run `callback` on cancellation (at once if already cancelled); returns an unsubscriber."""
        if self._cancelled:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    async def wait(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
            if self._cancelled:
                self._event.set()
        await self._event.wait()

    def child(self) -> CancelToken:
        token = CancelToken()
        token._unlink = self.on_cancel(lambda: token.cancel(self.reason))  # type: ignore[attr-defined]
        return token

    def detach(self) -> None:
        """Stop following the parent (call when a child token is done with)."""
        unlink = getattr(self, "_unlink", None)
        if unlink is not None:
            unlink()


# ---------------------------------------------------------------------------------------------
# Edits: what the hashline engine computes and the editor layer turns into TextEdits.


@dataclass(frozen=True)
class LineReplacement:
    """Replace old lines [start, end) (0-based, end exclusive) with `text`.

    `text` holds whole lines with their line terminators (it may be empty: a deletion). Applied
    to the old text, a file's replacements (non-overlapping) give its new text; the editor layer
    sends each one as a TextEdit, so a one-line change stays a one-line edit.
    """

    start: int
    end: int
    text: str
