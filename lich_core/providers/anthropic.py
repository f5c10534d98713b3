"""Anthropic Messages API (`/v1/messages`, anthropic-version 2023-06-01)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from lich_core.providers.base import TextCallback
from lich_core.providers.http import (
    HttpModel,
    ResponseLimits,
    TextBuffer,
    parse_tool_arguments,
    preview,
    sse_events,
)
from lich_core.vocabulary import Message, ModelResponse, ToolCall, ToolDefinition, Usage

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_HOST = "api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096

# Stream events that only keep the connection alive: not progress.
KEEPALIVE_EVENTS = ("ping",)
# Delta types holding the model's reasoning: progress, counted against the response cap.
THINKING_DELTAS = {"thinking_delta": "thinking", "signature_delta": "signature"}

# Prompt caching: the API caches the request's prefix up to each block marked with cache_control
# (tools, then system, then messages) and refuses a request with more than four marks.
CACHE_CONTROL = {"type": "ephemeral"}
MAX_CACHE_BREAKPOINTS = 4
# Marks on messages: the newest user turn (written to the cache for the next call) and the user turn
# before it (the previous call's newest turn, so this call reads its whole history from the cache).
MESSAGE_CACHE_BREAKPOINTS = 2

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


def split_system(messages: list[Message]) -> tuple[str, list[Message]]:
    """The API takes the system prompt as a field: every system message is hoisted and joined."""
    system = [m.content for m in messages if m.role == "system" and m.content]
    return "\n\n".join(system), [m for m in messages if m.role != "system"]


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
        ]
    blocks: list[dict[str, Any]] = []
    if message.content:
        # The API rejects empty text blocks, so an empty content simply adds none.
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    return blocks


def to_wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Alternating user/assistant turns: tool results become user turns, and consecutive turns of
    the same role (several tool results, a tool result then a user note) merge into one."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    for item in wire:
        # A lone text block is sent as a plain string: the shape every client sends for chat.
        content = item["content"]
        if len(content) == 1 and content[0]["type"] == "text":
            item["content"] = content[0]["text"]
    return wire


def to_wire_tools(tools: list[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def _mark(content: Any) -> Any:
    """`content` (a string or a block list) with cache_control on its last block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}]
    blocks = [dict(block) for block in content]
    blocks[-1]["cache_control"] = dict(CACHE_CONTROL)
    return blocks


def add_cache_breakpoints(body: dict[str, Any]) -> None:
    """Mark the request's stable prefix for the prompt cache, at most four marks in all.

    Each call re-sends the previous call's messages unchanged and appends to them, so the user turn
    before the newest one ends the previous call's prompt: marking it reads that whole prefix from
    the cache, and marking the newest turn writes the longer prefix for the next call (the next
    loop turn, or a follow-up). The tools' last definition and the system prompt are marked too:
    they come first and change least, so they stay cached when the history is rewritten
    (compression).
    """
    budget = MAX_CACHE_BREAKPOINTS
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(CACHE_CONTROL)}
        budget -= 1
    system = body.get("system")
    if system:
        body["system"] = _mark(system)
        budget -= 1
    messages = body.get("messages") or []
    user_turns = [
        i for i, item in enumerate(messages) if item["role"] == "user" and item["content"]
    ]
    for index in user_turns[-min(budget, MESSAGE_CACHE_BREAKPOINTS) :] if budget > 0 else []:
        messages[index] = {**messages[index], "content": _mark(messages[index]["content"])}


def _merge_usage(into: dict[str, Any], usage: Any) -> None:
    if isinstance(usage, dict):
        into.update({key: value for key, value in usage.items() if value is not None})


def _count(usage: dict[str, Any], key: str) -> int:
    try:
        return max(0, int(usage.get(key) or 0))
    except (TypeError, ValueError):
        return 0


def usage_from_wire(usage: Any) -> Usage:
    """The API's usage object as a Usage: its `input_tokens` counts only the prompt after the last
    cache mark, so the cached parts (read and written) are added back to give the whole prompt."""
    if not isinstance(usage, dict):
        return Usage()
    read = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    return Usage(
        input_tokens=_count(usage, "input_tokens") + read + written,
        output_tokens=_count(usage, "output_tokens"),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


@dataclass
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: TextBuffer = field(default_factory=TextBuffer)
    input: Any = None


class AnthropicModel(HttpModel):
    kind = "anthropic"
    default_base_url = ANTHROPIC_BASE_URL

    def endpoint(self) -> str:
        # Accept base URLs given with or without the /v1 suffix.
        return (
            f"{self.base_url}/messages"
            if self.base_url.endswith("/v1")
            else f"{self.base_url}/v1/messages"
        )

    def request_body(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        system, rest = split_system(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": to_wire_messages(rest),
            "stream": self.stream,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = to_wire_tools(tools)
        add_cache_breakpoints(body)
        return body

    def request_headers(self) -> dict[str, str]:
        headers = {
            "anthropic-version": ANTHROPIC_VERSION,
            "accept": "text/event-stream" if self.stream else "application/json",
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def parse_body(self, raw: bytes) -> ModelResponse:
        data = self.parse_json(raw, "response body")
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            if isinstance(data, dict) and data.get("type") == "error":
                raise self.error_in_body(data)
            raise self.malformed(f"expected a message, got {preview(raw)}")
        blocks = []
        for item in data["content"]:
            if item.get("type") == "text":
                block = _Block("text")
                block.parts.add(item.get("text", ""))
                blocks.append(block)
            elif item.get("type") == "tool_use":
                blocks.append(
                    _Block(
                        "tool_use",
                        id=item.get("id", ""),
                        name=item.get("name", ""),
                        input=item.get("input"),
                    )
                )
        return self._response(
            blocks,
            usage_from_wire(data.get("usage")),
            data.get("stop_reason"),
            data.get("model") or self.model,
        )

    async def read_stream(
        self, resp: httpx.Response, on_text: TextCallback | None, limits: ResponseLimits
    ) -> ModelResponse:
        blocks: dict[int, _Block] = {}
        # message_start carries the prompt's figures, message_delta the output's (and, from newer
        # API versions, the prompt's again): later figures replace earlier ones.
        wire_usage: dict[str, Any] = {}
        stop_reason: str | None = None
        model = self.model
        finished = False
        events = 0
        stray: list[str] = []
        async for event_name, data in sse_events(resp, stray, limits=limits):
            if finished:
                continue  # drain the body so the connection goes back to the pool
            events += 1
            event = self.parse_json(data, "stream event")
            if not isinstance(event, dict):
                raise self.malformed(f"stream event is not an object: {preview(data)}")
            kind = event.get("type") or event_name
            if kind not in KEEPALIVE_EVENTS and kind != "content_block_delta":
                limits.progress()  # deltas report their content themselves
            if kind == "message_start":
                message = event.get("message") or {}
                model = message.get("model") or model
                _merge_usage(wire_usage, message.get("usage"))
            elif kind == "content_block_start":
                block = event.get("content_block") or {}
                blocks[int(event.get("index", len(blocks)))] = _Block(
                    block.get("type", ""), id=block.get("id", ""), name=block.get("name", "")
                )
            elif kind == "content_block_delta":
                self._apply_delta(blocks, event, on_text, limits)
            elif kind == "message_delta":
                stop_reason = (event.get("delta") or {}).get("stop_reason") or stop_reason
                _merge_usage(wire_usage, event.get("usage"))
            elif kind == "message_stop":
                finished = True
                limits.finish()
            elif kind == "error":
                raise self.error_in_body(event)
        if not finished:
            raise self.cut_short(events, stray)
        return self._response(
            [blocks[i] for i in sorted(blocks)], usage_from_wire(wire_usage), stop_reason, model
        )

    def _apply_delta(
        self,
        blocks: dict[int, _Block],
        event: dict[str, Any],
        on_text: TextCallback | None,
        limits: ResponseLimits,
    ) -> None:
        index = int(event.get("index", 0))
        delta = event.get("delta") or {}
        block = blocks.setdefault(index, _Block("text"))
        kind = delta.get("type")
        if kind == "text_delta":
            piece = delta.get("text") or ""
            if piece:
                limits.content(piece)
                block.parts.add(piece)
                if on_text is not None:
                    on_text(piece)
        elif kind == "input_json_delta":
            piece = delta.get("partial_json") or ""
            limits.content(piece)
            block.parts.add(piece)
        elif kind in THINKING_DELTAS:
            limits.content(str(delta.get(THINKING_DELTAS[kind]) or ""))
        else:
            limits.progress()

    def _response(
        self, blocks: list[_Block], usage: Usage, stop_reason: str | None, model: str
    ) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in blocks:
            if block.kind == "text":
                text.append(block.parts.text())
            elif block.kind == "tool_use":
                source = (
                    block.input
                    if block.input is not None and not block.parts
                    else block.parts.text()
                )
                arguments, raw = parse_tool_arguments(source)
                calls.append(
                    ToolCall(id=block.id, name=block.name, arguments=arguments, raw_arguments=raw)
                )
        stop = (
            "tool_calls"
            if calls
            else STOP_REASONS.get(stop_reason or "end_turn", stop_reason or "stop")
        )
        return ModelResponse(
            message=Message(role="assistant", content="".join(text), tool_calls=calls),
            usage=usage,
            stop_reason=stop,
            provider=self.name,
            model=model,
        )
