"""The tool contract: results, context, cancellation and the Tool protocol.

Tools return failures as `ToolResult(ok=False, error=...)`; they do not raise. Error strings begin
with a stable prefix (`not_found:`, `path_escape:`, ...) so a model and a test can act on them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from lich_core.hashline.read_state import ReadState
    from lich_core.workspace import Workspace

JsonSchemaObject = dict[str, Any]

# Capability names a tool may declare (kli's gates plus lich's network tools).
CAPABILITIES = ("file/read", "file/write", "file/edit", "process/exec", "image/eval", "net/fetch")


@dataclass
class ToolResult:
    ok: bool
    output: str = ""
    error: str | None = None
    # Structured extras that never reach the model: prior content for a diff, exit codes, ...
    details: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "output": self.output, "error": self.error}


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


@dataclass
class ToolContext:
    work_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    cancel: CancelToken = field(default_factory=CancelToken)
    workspace: Workspace | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    # Per-session record of which lines the model has seen (hashline read-before-edit).
    read_state: ReadState | None = None
    # Label for edits made during this call ("lich: <task title>" in the editor).
    edit_label: str = "lich"

    def __post_init__(self) -> None:
        self.work_dir = Path(self.work_dir).resolve()
        if self.workspace is None:
            from lich_core.workspace import DiskWorkspace

            self.workspace = DiskWorkspace(self.work_dir)
        if self.read_state is None:
            from lich_core.hashline.read_state import ReadState

            self.read_state = ReadState()


@runtime_checkable
class Tool(Protocol):
    name: str
    description: str
    parameters: JsonSchemaObject

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


def tool_timeout_ms(tool: Tool) -> int | None:
    return getattr(tool, "timeout_ms", None)


def tool_capability(tool: Tool) -> str | None:
    return getattr(tool, "capability", None)


def tool_max_output_chars(tool: Tool) -> int | None:
    """A tool that caps its own output (terminal: 50,000) declares it; else the executor's clamp applies."""
    return getattr(tool, "max_output_chars", None)


@dataclass(frozen=True)
class ToolDefinition:
    """What a provider sees of a tool."""

    name: str
    description: str
    parameters: JsonSchemaObject

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass
class FunctionTool:
    """A Tool built from a plain async function: what builtins and plugins usually use."""

    name: str
    description: str
    parameters: JsonSchemaObject
    run: Callable[[dict[str, Any], ToolContext], Any]
    capability: str | None = None
    timeout_ms: int | None = None
    max_output_chars: int | None = None

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.run(args, ctx)
