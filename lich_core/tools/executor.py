"""ToolExecutor: runs one tool call and never throws.

Order of checks: unknown tool → already cancelled → capability gate → call guards (approvals)
→ run under a deadline merged with the caller's cancellation → clamp output.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.guard import DEFAULT_MAX_OUTPUT_CHARS, clamp_output, error_result
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import (
    Tool,
    ToolContext,
    ToolResult,
    tool_capability,
    tool_max_output_chars,
    tool_timeout_ms,
)

DEFAULT_TOOL_TIMEOUT_MS = 30_000
TERMINAL_TOOL_TIMEOUT_MS = 300_000
RUN_TESTS_TOOL_TIMEOUT_MS = 600_000
MCP_TOOL_TIMEOUT_MS = 120_000
# After cancelling a tool, how long to wait for it to clean up (kill children, remove temps).
CANCEL_GRACE_MS = 5_000

# A guard inspects a call before it runs and returns an error string to refuse it (approvals).
CallGuard = Callable[[Tool, dict[str, Any], ToolContext], Awaitable[str | None]]


class ToolExecutor:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        gate: CapabilityGate | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        settings: Mapping[str, Any] | None = None,
        guards: Sequence[CallGuard] = (),
    ) -> None:
        self.registry = registry
        self.gate = gate or CapabilityGate()
        self.work_dir = Path(work_dir or os.getcwd())
        self.env = dict(env or {})
        self.settings = settings or {}
        self.guards = list(guards)

    def default_context(self) -> ToolContext:
        return ToolContext(work_dir=self.work_dir, env=dict(self.env), settings=self.settings)

    async def execute(
        self, name: str, args: dict[str, Any] | None, ctx: ToolContext | None = None
    ) -> ToolResult:
        tool = self.registry.get(name)
        if tool is None:
            return error_result(f"unknown_tool: {name}")
        ctx = ctx or self.default_context()
        if ctx.cancel.cancelled:
            return error_result("cancelled")
        denial = self.gate.denial(tool_capability(tool))
        if denial:
            return error_result(denial)
        if not isinstance(args, dict):
            args = {}
        try:
            for guard in self.guards:
                refusal = await guard(tool, args, ctx)
                if refusal:
                    return error_result(refusal)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - a broken guard refuses, it never crashes
            return error_result(f"guard_error: {err}")
        if ctx.cancel.cancelled:
            return error_result("cancelled")
        return await self._run(tool, args, ctx)

    async def _run(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        timeout_ms = tool_timeout_ms(tool) or DEFAULT_TOOL_TIMEOUT_MS
        token = ctx.cancel.child()
        call_ctx = _with_token(ctx, token)
        work = asyncio.ensure_future(tool.execute(args, call_ctx))
        cancel_wait = asyncio.ensure_future(token.wait())
        try:
            done, _ = await asyncio.wait(
                {work, cancel_wait}, timeout=timeout_ms / 1000, return_when=asyncio.FIRST_COMPLETED
            )
            if work in done:
                return _shape(work, token, tool_max_output_chars(tool) or DEFAULT_MAX_OUTPUT_CHARS)
            timed_out = not token.cancelled
            token.cancel("timeout" if timed_out else token.reason)
            await _stop(work)
            if timed_out:
                return error_result(f"timeout: {tool.name} exceeded {timeout_ms}ms")
            return error_result("cancelled")
        except asyncio.CancelledError:
            token.cancel("cancelled")
            await _stop(work)
            raise
        finally:
            cancel_wait.cancel()
            token.detach()

    @staticmethod
    def format_result(result: ToolResult) -> str:
        """Tool-message content: raw output on success, JSON on error (the model can parse it)."""
        if result.ok:
            return result.output
        return json.dumps(result.to_json_dict(), ensure_ascii=False)


def _with_token(ctx: ToolContext, token: Any) -> ToolContext:
    clone = object.__new__(ToolContext)
    clone.__dict__.update(ctx.__dict__)
    clone.cancel = token
    return clone


def _shape(work: asyncio.Future[Any], token: Any, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> ToolResult:
    try:
        result = work.result()
    except asyncio.CancelledError:
        return error_result("cancelled")
    except Exception as err:  # noqa: BLE001 - never throw
        return error_result("cancelled") if token.cancelled else error_result(err)
    if not isinstance(result, ToolResult):
        return error_result(f"bad_tool_result: tool returned {type(result).__name__}, not ToolResult")
    if result.ok:
        result.output = clamp_output(result.output, max_output_chars)
    elif token.cancelled and result.error != "cancelled" and not (result.error or "").startswith("timeout"):
        result.error = "cancelled"
    return result


async def _stop(work: asyncio.Future[Any]) -> None:
    """Cancel the tool's task and give it a moment to clean up (kill its children)."""
    work.cancel()
    try:
        await asyncio.wait_for(asyncio.shield(work), CANCEL_GRACE_MS / 1000)
    except (asyncio.CancelledError, asyncio.TimeoutError, Exception):  # noqa: BLE001
        pass
