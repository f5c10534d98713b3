"""The tool contract: results, context, cancellation and the Tool protocol.

Tools return failures as `ToolResult(ok=False, error=...)`; they do not raise. Error strings begin
with a stable prefix (`not_found:`, `path_escape:`, ...) so a model and a test can act on them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import InitVar, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# The defaults live with the typed settings; re-exported here, where tools have imported them.
from lich_core.settings import (
    DEFAULT_TERMINAL_TIMEOUT_MS,
    DUCKDUCKGO_HTML_URL,
    Settings,
    settings_of,
)

# The shared vocabulary (results, definitions, cancellation) lives in lich_core.vocabulary; it is
# re-exported here, where the tool contract has always been imported from.
from lich_core.vocabulary import CancelToken, JsonSchemaObject, ToolDefinition, ToolResult

if TYPE_CHECKING:
    from lich_core.hashline.read_state import ReadState
    from lich_core.workspace import Workspace

__all__ = [
    "CAPABILITIES",
    "DEFAULT_TERMINAL_TIMEOUT_MS",
    "DEFAULT_WEB_SEARCH",
    "DUCKDUCKGO_HTML_URL",
    "EXEC_CAPABILITY",
    "WEB_SEARCH_KINDS",
    "CancelToken",
    "FunctionTool",
    "JsonSchemaObject",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolResult",
    "WebSearchBackend",
    "WriteLedger",
    "tool_capability",
    "tool_max_output_chars",
    "tool_timeout_ms",
]

# Capability names a tool may declare (kli's gates plus lich's network tools).
CAPABILITIES = (
    "file/read",
    "file/write",
    "file/edit",
    "process/exec",
    "image/eval",
    "net/fetch",
    "mcp/call",
)
# Running programs: without it, what a run writes is recorded so it never runs unasked (WriteLedger).
EXEC_CAPABILITY = "process/exec"
# web_search's backends (config's `web_search.kind`); DuckDuckGo's HTML endpoint is the default.
WEB_SEARCH_KINDS = ("duckduckgo", "searxng")


@dataclass(frozen=True)
class WebSearchBackend:
    """Where web_search sends a query: config's `web_search`, validated (lich_core.config).

    `kind` is "duckduckgo" (`url`: the HTML endpoint, default DUCKDUCKGO_HTML_URL) or "searxng"
    (`url`: the instance, whose `/search?format=json` is asked); `api_key_env` names the variable
    whose value is sent as a bearer token (a SearXNG behind an authenticating proxy).
    """

    kind: str = "duckduckgo"
    url: str = DUCKDUCKGO_HTML_URL
    api_key_env: str | None = None

    @classmethod
    def from_config(cls, value: Mapping[str, Any] | None) -> WebSearchBackend:
        """The backend a (validated) `web_search` value names; None or {} is the default."""
        if not value:
            return DEFAULT_WEB_SEARCH
        kind = str(value.get("kind") or "duckduckgo")
        url = value.get("url") or (DUCKDUCKGO_HTML_URL if kind == "duckduckgo" else "")
        return cls(kind=kind, url=str(url), api_key_env=value.get("api_key_env") or None)


DEFAULT_WEB_SEARCH = WebSearchBackend()


@dataclass
class WriteLedger:
    """The files one run wrote through its write tools (write_file, edit_file, apply_patch,
    memory_append): git_commit commits only these. `before_write`, when set, hears of each write
    before it happens: an agent run without process/exec records it in the trust store
    (lich_core.trust), so code it wrote never runs without the user's yes."""

    paths: set[Path] = field(default_factory=set)
    before_write: Callable[[list[Path]], None] | None = None


@dataclass
class ToolContext:
    work_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    cancel: CancelToken = field(default_factory=CancelToken)
    workspace: Workspace | None = None
    # The run's configuration, typed (tools read `ctx.settings.docs_dir`); also a read-only
    # mapping, which is how plugin tools read keys of their own. A plain mapping given here (a
    # direct call, a test) is turned into Settings.
    settings: Settings = field(default_factory=Settings)
    # Per-session record of which lines the model has seen (hashline read-before-edit).
    read_state: ReadState | None = None
    # Label for edits made during this call ("lich: <task title>" in the editor).
    edit_label: str = "lich"
    # How long a terminal command may run when the call gives no `timeout_ms` (config's
    # terminal_timeout_ms, which the runtime passes through the executor).
    terminal_timeout_ms: int = DEFAULT_TERMINAL_TIMEOUT_MS
    # Where web_search sends queries (config's web_search, which the runtime passes through the
    # executor); DuckDuckGo's HTML endpoint when nothing configures it.
    web_search: WebSearchBackend = DEFAULT_WEB_SEARCH
    # Where update_plan reports the plan (entries {content, status, priority}, explanation): the
    # run emits it as a `plan` event. None outside an agent run (a direct call), where the tool
    # only returns its result. Plain data, so tools need not import the agent.
    report_plan: Callable[[tuple[dict[str, str], ...], str | None], Awaitable[None]] | None = None
    # Where a face's approval check reports the question it is about to ask (the fields of
    # lich_core.agent.events.ApprovalAsked but turn and call_id): the run emits it as an
    # `approval` event. None outside an agent run.
    report_approval: Callable[[dict[str, Any]], Awaitable[None]] | None = None
    # What this run wrote (shared by every call's clone of the run's context).
    written: WriteLedger = field(default_factory=WriteLedger)

    # Set by with_cancel and the executor, whose work_dir comes from a context that resolved it:
    # resolving costs file-system calls, and a clone is made for every tool call.
    work_dir_resolved: InitVar[bool] = False

    def __post_init__(self, work_dir_resolved: bool) -> None:
        if not isinstance(self.settings, Settings):
            self.settings = settings_of(self.settings)
        if not work_dir_resolved:
            self.work_dir = Path(self.work_dir).resolve()
        if self.workspace is None:
            from lich_core.workspace import DiskWorkspace

            self.workspace = DiskWorkspace(self.work_dir)
        if self.read_state is None:
            from lich_core.hashline.read_state import ReadState

            self.read_state = ReadState()

    def with_cancel(self, cancel: CancelToken) -> ToolContext:
        """This context with another cancellation token (the executor's per-call token): a
        shallow copy, so the env, workspace, read state and ledger of what was written stay
        shared with the run's context."""
        return replace(self, cancel=cancel, work_dir_resolved=True)


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
