"""OpenAI-compatible chat completions (OpenAI, OpenRouter, vLLM, llama.cpp server, LM Studio)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from lich_core.providers.base import TextCallback
from lich_core.providers.http import (
    HttpModel,
    ResponseLimits,
    TextBuffer,
    function_tools,
    parse_tool_arguments,
    preview,
    sse_events,
)
from lich_core.vocabulary import Message, ModelResponse, ToolCall, ToolDefinition, Usage

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"

# Fields of a delta holding the model's reasoning (vLLM, DeepSeek, OpenRouter, llama.cpp): not part
# of the answer, but progress, and counted against the response cap like the answer.
REASONING_FIELDS = ("reasoning_content", "reasoning")

FINISH_REASONS = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
}


def to_wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
        elif message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in message.tool_calls
                ]
            wire.append(item)
        else:
            wire.append({"role": message.role, "content": message.content})
    return wire


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)


class OpenAICompatModel(HttpModel):
    kind = "openai_compat"
    default_base_url = OPENAI_BASE_URL
    suggest_v1_on_404 = True

    def request_body(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire_messages(messages),
            "stream": self.stream,
        }
        if tools:
            body["tools"] = function_tools(tools)
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        if self.max_tokens:
            body["max_tokens"] = self.max_tokens
        return body

    def request_headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream" if self.stream else "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def parse_body(self, raw: bytes) -> ModelResponse:
        data = self.parse_json(raw, "response body")
        if isinstance(data, dict) and data.get("error"):
            raise self.error_in_body(data)
        try:
            choice = data["choices"][0]
            wire = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise self.malformed(f"expected a chat completion, got {preview(raw)}") from None
        calls = []
        for index, call in enumerate(wire.get("tool_calls") or []):
            function = call.get("function") or {}
            arguments, raw_arguments = parse_tool_arguments(function.get("arguments"))
            calls.append(
                ToolCall(
                    id=call.get("id") or f"call_{index}",
                    name=function.get("name", ""),
                    arguments=arguments,
                    raw_arguments=raw_arguments,
                )
            )
        message = Message(role="assistant", content=wire.get("content") or "", tool_calls=calls)
        return ModelResponse(
            message=message,
            usage=_usage(data.get("usage")),
            stop_reason=_finish(choice.get("finish_reason"), calls),
            provider=self.name,
            model=data.get("model") or self.model,
        )

    async def read_stream(
        self, resp: httpx.Response, on_text: TextCallback | None, limits: ResponseLimits
    ) -> ModelResponse:
        text = TextBuffer()
        pending: dict[int, _PendingCall] = {}
        usage = Usage()
        finish: str | None = None
        done = False
        model = self.model
        events = 0
        stray: list[str] = []
        async for _event, data in sse_events(resp, stray, limits=limits):
            # Reading on to the end of the body (rather than breaking out) returns the
            # connection to the pool instead of closing it.
            if done:
                continue
            events += 1
            if data == "[DONE]":
                done = True
                limits.finish()
                continue
            chunk = self.parse_json(data, "stream chunk")
            if not isinstance(chunk, dict):
                raise self.malformed(f"stream chunk is not an object: {preview(data)}")
            if chunk.get("error"):
                raise self.error_in_body(chunk)
            if chunk.get("usage"):
                usage = _usage(chunk["usage"])
                limits.progress()
            model = chunk.get("model") or model
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                piece = delta.get("content")
                if piece and isinstance(piece, str):
                    limits.content(piece)
                    text.add(piece)
                    if on_text is not None:
                        on_text(piece)
                for field_name in REASONING_FIELDS:
                    thought = delta.get(field_name)
                    if thought and isinstance(thought, str):
                        limits.content(thought)
                for call_delta in delta.get("tool_calls") or []:
                    _count_call_delta(limits, call_delta)
                    _merge_call_delta(pending, call_delta)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
                    limits.progress()
        if not done and finish is None:
            raise self.cut_short(events, stray)
        calls = []
        for index in sorted(pending):
            call = pending[index]
            arguments, raw_arguments = parse_tool_arguments("".join(call.parts))
            calls.append(
                ToolCall(
                    id=call.id or f"call_{index}",
                    name=call.name,
                    arguments=arguments,
                    raw_arguments=raw_arguments,
                )
            )
        message = Message(role="assistant", content=text.text(), tool_calls=calls)
        return ModelResponse(
            message=message,
            usage=usage,
            stop_reason=_finish(finish, calls),
            provider=self.name,
            model=model,
        )


def _count_call_delta(limits: ResponseLimits, delta: Any) -> None:
    """A tool-call fragment is content too: its name and argument pieces count against the cap."""
    if not isinstance(delta, dict):
        return
    function = delta.get("function") or {}
    if not isinstance(function, dict):
        return
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    piece = (function.get("name") or "") + (arguments if isinstance(arguments, str) else "")
    if piece or delta.get("id"):
        limits.content(piece)


def _merge_call_delta(pending: dict[int, _PendingCall], delta: dict[str, Any]) -> None:
    """Tool calls arrive as fragments keyed by index: id and name first, then argument pieces."""
    index = delta.get("index")
    if not isinstance(index, int):
        # Servers that omit the index send one call at a time: a new id starts the next call.
        index = len(pending) if (delta.get("id") or not pending) else max(pending)
    call = pending.setdefault(index, _PendingCall())
    if delta.get("id"):
        call.id = delta["id"]
    function = delta.get("function") or {}
    if function.get("name") and not call.name:
        # Some servers repeat the full name on every fragment; the first one is the name.
        call.name = function["name"]
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        call.parts.append(arguments)
    elif isinstance(arguments, dict):
        call.parts.append(json.dumps(arguments))


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()
    # prompt_tokens counts the cached part too; servers without a cache send no details (or null).
    details = data.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        cached = data.get("prompt_cache_hit_tokens")  # DeepSeek's name for the same figure
    return Usage(
        input_tokens=_count(data.get("prompt_tokens")),
        output_tokens=_count(data.get("completion_tokens")),
        cache_read_tokens=_count(cached),
    )


def _finish(reason: str | None, calls: list[ToolCall]) -> str:
    if calls:
        return "tool_calls"
    return FINISH_REASONS.get(reason or "stop", reason or "stop")
