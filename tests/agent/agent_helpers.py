"""Helpers for the agent tests (imported by the test modules): a config rooted in tmp_path and a runtime with small test tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lich_core.config import Config, load_config
from lich_core.runtime import ToolRuntime
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import FunctionTool, ToolContext, ToolResult
from tests.support.event_schema import assert_valid_event

OBJECT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "additionalProperties": True,
}


# How long a test waits for something it expects to happen: generous for a loaded machine, it
# only decides how soon a broken test fails.
WAIT_S = 30.0


async def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    """Poll `predicate` until it holds; AssertionError naming `what` after `timeout_s`."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        await asyncio.sleep(0.02)


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
    """Records a run's events. Reading them checks every one against docs/lich-event.schema.json
    (here, not in the listener: the loop logs and ignores a listener that raises)."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self._checked = 0

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    def _check(self) -> None:
        for event in self.events[self._checked :]:
            assert_valid_event(event.to_dict(), f"event {event.seq}")
        self._checked = len(self.events)

    def types(self) -> list[str]:
        self._check()
        return [e.type for e in self.events]

    def of(self, event_type: str) -> list[Any]:
        self._check()
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
