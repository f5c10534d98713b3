"""Helpers for the agent tests (imported by the test modules): a config rooted in tmp_path and a runtime with small test tools."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lich_core.config import Config, load_config
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.runtime import ToolRuntime
from lich_core.tools.types import FunctionTool, ToolContext, ToolResult

OBJECT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": True}


def make_config(work_dir: Path, **overrides: Any) -> Config:
    # HOME points into the temp dir so a developer's ~/.config/lich never leaks into a test.
    return load_config(work_dir, overrides=overrides, env={"HOME": str(work_dir / "_home")})


class RecordingTools:
    """Small tools that record what they saw."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.contexts: list[ToolContext] = []
        self.started = asyncio.Event()

    async def echo(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(("echo", args))
        self.contexts.append(ctx)
        return ToolResult(ok=True, output=str(args.get("text", "")))

    async def fail(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(("fail", args))
        return ToolResult(ok=False, output="partial", error="not_found: nothing here")

    async def wait(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(("wait", args))
        self.started.set()
        await ctx.cancel.wait()
        return ToolResult(ok=False, error="cancelled")

    async def big(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(("big", args))
        return ToolResult(ok=True, output="x" * int(args.get("size", 1000)))

    def tools(self) -> list[FunctionTool]:
        return [
            FunctionTool("echo", "Echo text back.", OBJECT_SCHEMA, self.echo),
            FunctionTool("fail", "Always fails.", OBJECT_SCHEMA, self.fail),
            FunctionTool("wait", "Waits until cancelled.", OBJECT_SCHEMA, self.wait),
            FunctionTool("big", "Returns `size` characters.", OBJECT_SCHEMA, self.big),
        ]


def make_runtime(config: Config, tools: list[FunctionTool]) -> ToolRuntime:
    base = ToolRegistry(tools)
    registry = base.filtered(config.get("tools_enabled", "all"))
    gate = CapabilityGate(config.get("capabilities"))
    executor = ToolExecutor(registry, gate=gate, work_dir=config["work_dir"], settings=config)
    return ToolRuntime(base_registry=base, registry=registry, executor=executor, config=config)


class EventLog:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, event_type: str) -> list[Any]:
        return [e for e in self.events if e.type == event_type]


def assert_history_valid(messages: list[Any]) -> None:
    """Every assistant tool call is answered by exactly one tool message right after it."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        assert message.role != "tool", f"orphaned tool message at {index - 1}"
        if message.role == "assistant" and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            answers = []
            while index < len(messages) and messages[index].role == "tool":
                answers.append(messages[index].tool_call_id)
                index += 1
            assert answers == ids, f"calls {ids} answered by {answers}"
