"""The session's one tool runtime per config generation (plugins are loaded once per config and
shared by `lich.ask` and the commands); the runtime of an older config is closed in the
background, its MCP servers with it, once no running task uses it (a task keeps the settings it
started with, a reloaded config notwithstanding)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lich_core.hashline.read_state import ReadState
    from lich_core.runtime import ToolRuntime
    from lich_core.tools.executor import CallCheck
    from lich_core.tools.types import ToolContext
    from lich_core.workspace import Workspace
    from lich_lsp.context import SessionContext

log = logging.getLogger("lich.lsp.runtimes")
# How long closing the tool runtime (its MCP servers) may take at shutdown.
RUNTIME_CLOSE_TIMEOUT_S = 5.0


class ToolRuntimes:
    """The tool runtime for the current config, rebuilt only after the config changed."""

    def __init__(self, *, ctx: SessionContext, call_checks: Sequence[CallCheck]) -> None:
        self._holder = ctx.holder
        self._call_checks = tuple(call_checks)
        self._messages = ctx.messages
        self._runtime: ToolRuntime | None = None
        self._generation = -1
        # id(runtime) -> how many running tasks use it (borrow): an older config's runtime is
        # closed when its last task ends, not under it.
        self._borrowed: dict[int, int] = {}

    def current(self) -> ToolRuntime:
        if self._runtime is None or self._generation != self._holder.generation:
            # Heavy (plugins, MCP): loaded with the first tool call, not at initialize.
            from lich_core.runtime import build_tool_runtime

            old, self._runtime = (
                self._runtime,
                build_tool_runtime(self._holder.config, call_checks=self._call_checks),
            )
            self._generation = self._holder.generation
            if old is not None and not self._borrowed.get(id(old)):
                self._close_in_background(old)
        return self._runtime

    @contextlib.contextmanager
    def borrow(self) -> Iterator[ToolRuntime]:
        """The current runtime for the whole of one task: still open after a newer config
        replaced it, until the task ends (its MCP servers are part of the task's settings)."""
        runtime = self.current()
        key = id(runtime)
        self._borrowed[key] = self._borrowed.get(key, 0) + 1
        try:
            yield runtime
        finally:
            self._borrowed[key] -= 1
            if not self._borrowed[key]:
                del self._borrowed[key]
                if runtime is not self._runtime:
                    self._close_in_background(runtime)

    def _close_in_background(self, runtime: ToolRuntime) -> None:
        if getattr(runtime, "mcp", None) is not None:  # only MCP servers hold anything to close
            self._messages.background(runtime.aclose())

    async def close(self) -> None:
        """Stop what the runtime started and holds (MCP servers), at shutdown."""
        runtime, self._runtime = self._runtime, None
        if runtime is not None and getattr(runtime, "mcp", None) is not None:
            try:
                await asyncio.wait_for(runtime.aclose(), RUNTIME_CLOSE_TIMEOUT_S)
            except (asyncio.TimeoutError, Exception) as err:  # noqa: BLE001 - shutting down regardless
                log.warning("closing the tool runtime failed: %s", err)

    def mcp_status(self) -> list[dict[str, Any]]:
        """Each configured MCP server and its state (not_started until the first task attaches)."""
        runtime = self._runtime
        manager = getattr(runtime, "mcp", None) if runtime is not None else None
        if manager is not None:
            return list(manager.status())
        servers = self._holder.config.settings.mcp_servers
        return [
            {"name": name, "state": "not_started", "tools": 0, "last_error": None}
            for name in servers
        ]

    def context(self, workspace: Workspace, read_state: ReadState, label: str) -> ToolContext:
        """A tool call's context on the current runtime, reading and writing through `workspace`."""
        ctx = self.current().context()
        ctx.workspace = workspace
        ctx.read_state = read_state
        ctx.edit_label = label
        return ctx
