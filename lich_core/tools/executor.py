"""ToolExecutor: runs one tool call and never throws.

Order of checks: unknown tool → already cancelled → capability gate → call checks (approvals)
→ run under a deadline merged with the caller's cancellation → clamp output.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.settings import settings_of
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.guard import (
    CANCEL_GRACE_MS,  # noqa: F401 - re-exported: callers read the grace from here
    DEFAULT_MAX_OUTPUT_CHARS,
    clamp_output,
    error_result,
    with_timeout,
)
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import (
    DEFAULT_TERMINAL_TIMEOUT_MS,
    DEFAULT_WEB_SEARCH,
    Tool,
    ToolContext,
    WebSearchBackend,
    tool_capability,
    tool_max_output_chars,
    tool_timeout_ms,
)
from lich_core.vocabulary import CancelToken, ToolResult

DEFAULT_TOOL_TIMEOUT_MS = 30_000
TERMINAL_TOOL_TIMEOUT_MS = 300_000

# A call check inspects a call before it runs and returns an error string to refuse it (approvals).
CallCheck = Callable[[Tool, dict[str, Any], ToolContext], Awaitable[str | None]]


class ToolExecutor:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        gate: CapabilityGate | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        settings: Mapping[str, Any] | None = None,
        call_checks: Sequence[CallCheck] = (),
        terminal_timeout_ms: int = DEFAULT_TERMINAL_TIMEOUT_MS,
        web_search: WebSearchBackend = DEFAULT_WEB_SEARCH,
    ) -> None:
        self.registry = registry
        self.gate = gate or CapabilityGate()
        self.work_dir = Path(work_dir or os.getcwd())
        self.env = dict(env or {})
        self.settings = settings_of(settings)
        self.call_checks = list(call_checks)
        self.terminal_timeout_ms = terminal_timeout_ms
        self.web_search = web_search
        # (work_dir it was made for, a context for it): what a default context shares, made once.
        self._base: tuple[Path, ToolContext] | None = None

    def default_context(self) -> ToolContext:
        """A context for one call, as ToolContext(work_dir, env, settings, ...) makes it.

        What is the same for every call is made once per work dir: the resolved work dir (a
        file-system call) and its DiskWorkspace (stateless but for a lock no await happens
        under). Per call, a new ToolContext: its own cancel token, read state, ledger and copy
        of the env. The executor's attributes (env, settings, terminal_timeout_ms, web_search)
        are read at each call.
        """
        base = self._base
        if base is None or base[0] is not self.work_dir:
            base = self._base = (self.work_dir, ToolContext(work_dir=self.work_dir))
        return ToolContext(
            work_dir=base[1].work_dir,
            env=dict(self.env),
            workspace=base[1].workspace,
            settings=self.settings,
            terminal_timeout_ms=self.terminal_timeout_ms,
            web_search=self.web_search,
            work_dir_resolved=True,
        )

    async def execute(
        self, name: str, args: dict[str, Any] | None, ctx: ToolContext | None = None
    ) -> ToolResult:
        tool = self.registry.get(name)
        if tool is None:
            return error_result(f"unknown_tool: {name}")
        if ctx is None:
            ctx = self.default_context()
        cancel = ctx.cancel
        if cancel.cancelled:
            return error_result("cancelled")
        # A tool's declarations are read at each call: a plugin may change them.
        denial = self.gate.denial(tool_capability(tool))
        if denial:
            return error_result(denial)
        if not isinstance(args, dict):
            args = {}
        if (
            self.call_checks
        ):  # without any, nothing can have cancelled the call since the check above
            try:
                for check in self.call_checks:
                    refusal = await check(tool, args, ctx)
                    if refusal:
                        return error_result(refusal)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - a broken call check refuses, it never crashes
                return error_result(f"guard_error: {err}")
            if cancel.cancelled:
                return error_result("cancelled")
        timeout_ms = tool_timeout_ms(tool) or DEFAULT_TOOL_TIMEOUT_MS
        max_output_chars = tool_max_output_chars(tool) or DEFAULT_MAX_OUTPUT_CHARS
        work = partial(_run, tool, args, ctx, max_output_chars)
        try:
            return await with_timeout(work, timeout_ms, tool.name, cancel=cancel)
        except ToolError as err:  # the deadline (`timeout: ...`) or the caller (`cancelled`)
            return error_result(err)


async def _run(
    tool: Tool, args: dict[str, Any], ctx: ToolContext, max_output_chars: int, token: CancelToken
) -> ToolResult:
    """One call of `tool` under with_timeout's `token`: the work of the call's task."""
    # The tool sees one token: cancelled by the caller's token or by the deadline.
    try:
        result = await tool.execute(args, ctx.with_cancel(token))
    except Exception as err:  # noqa: BLE001 - never throw
        return error_result("cancelled") if token.cancelled else error_result(err)
    return _shape(result, token, max_output_chars)


def _shape(result: Any, token: CancelToken, max_output_chars: int) -> ToolResult:
    if not isinstance(result, ToolResult):
        return error_result(
            f"bad_tool_result: tool returned {type(result).__name__}, not ToolResult"
        )
    if result.ok:
        result.output = clamp_output(result.output, max_output_chars)
    elif (
        token.cancelled
        and result.error != "cancelled"
        and not (result.error or "").startswith("timeout")
    ):
        # A tool that noticed the cancellation reports how it died ("exit 137"); the model
        # should read why instead.
        result.error = "cancelled"
    return result
