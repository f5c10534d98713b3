"""OpenAI-compatible chat completions (OpenAI, OpenRouter, vLLM, llama.cpp server, LM Studio)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lich_core.agent.messages import Message, ModelResponse, ToolCall, Usage
from lich_core.providers.base import ProviderError, TextCallback
from lich_core.providers.errors import malformed, stream_error
from lich_core.providers.http import HttpModel, parse_tool_arguments, sse_events
from lich_core.tools.types import ToolDefinition

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"

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


def to_wire_tools(tools: list[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)


class OpenAICompatModel(HttpModel):
    kind = "openai_compat"
    default_base_url = OPENAI_BASE_URL

    def request_body(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire_messages(messages),
            "stream": self.stream,
        }
        if tools:
            body["tools"] = to_wire_tools(tools)
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

    async def _complete(
        self, messages: list[Message], tools: list[ToolDefinition], on_text: TextCallback | None
    ) -> ModelResponse:
        url = f"{self.base_url}/chat/completions"
        async with self._open(
            url, self.request_body(messages, tools), self.request_headers()
        ) as resp:
            if not self.stream:
                return self._parse_body(await resp.aread())
            return await self._read_stream(resp, on_text)

    def _bad(self, what: str) -> ProviderError:
        return malformed(what, provider=self.name, url=self.base_url)

    def _parse_body(self, raw: bytes) -> ModelResponse:
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, ValueError):
            raise self._bad(f"expected JSON, got {raw[:120]!r}") from None
        if isinstance(data, dict) and data.get("error"):
            raise stream_error(data, provider=self.name, url=self.base_url)
        try:
            choice = data["choices"][0]
            wire = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise self._bad(f"expected a chat completion, got {raw[:120]!r}") from None
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

    async def _read_stream(self, resp: Any, on_text: TextCallback | None) -> ModelResponse:
        text_parts: list[str] = []
        pending: dict[int, _PendingCall] = {}
        usage = Usage()
        finish: str | None = None
        done = False
        model = self.model
        async for _event, data in sse_events(resp):
            # Reading on to the end of the body (rather than breaking out) returns the
            # connection to the pool instead of closing it.
            if done:
                continue
            if data == "[DONE]":
                done = True
                continue
            try:
                chunk = json.loads(data)
            except (json.JSONDecodeError, ValueError):
                raise self._bad(f"invalid JSON in stream chunk: {data[:120]!r}") from None
            if not isinstance(chunk, dict):
                raise self._bad(f"stream chunk is not an object: {data[:120]!r}")
            if chunk.get("error"):
                raise stream_error(chunk, provider=self.name, url=self.base_url)
            if chunk.get("usage"):
                usage = _usage(chunk["usage"])
            model = chunk.get("model") or model
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                piece = delta.get("content")
                if piece:
                    text_parts.append(piece)
                    if on_text is not None:
                        on_text(piece)
                for call_delta in delta.get("tool_calls") or []:
                    _merge_call_delta(pending, call_delta)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        if not done and finish is None:
            raise ProviderError(
                "network",
                "stream ended before the response was complete",
                provider=self.name,
                url=self.base_url,
            )
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
        message = Message(role="assistant", content="".join(text_parts), tool_calls=calls)
        return ModelResponse(
            message=message,
            usage=usage,
            stop_reason=_finish(finish, calls),
            provider=self.name,
            model=model,
        )


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


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()
    return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))


def _finish(reason: str | None, calls: list[ToolCall]) -> str:
    if calls:
        return "tool_calls"
    return FINISH_REASONS.get(reason or "stop", reason or "stop")
