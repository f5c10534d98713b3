"""What a plugin module exports and what its hooks and tools receive."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from lich_core.tools.types import Tool
from lich_core.vocabulary import Message, ModelResponse

HOOK_NAMES = (
    "before_tool_call",
    "after_tool_call",
    "before_llm_call",
    "on_run_start",
    "on_run_end",
)
# Roles a plugin entry may be granted in its `models` list.
MODEL_ROLES = ("chat", "compress")
NOTE_MAX_CHARS = 2_000
RESULT_SUMMARY_MAX_CHARS = 300


# Hook payloads are plain dicts, as the seed gives them: a plugin may read, copy, serialise
# (json.dumps) and annotate one. Each TypedDict below types one hook's dict for readers and
# mypy; at runtime `ToolCallInfo(tool_name=..., args=...)` is a plain dict. Every hook call gets
# a fresh dict of its own, so whatever a plugin changes in it changes nothing in lich.


class ToolCallInfo(TypedDict):
    """`before_tool_call`: the call about to run (a copy of its arguments)."""

    tool_name: str
    args: dict[str, Any]


class ToolResultInfo(TypedDict):
    """`after_tool_call`: the call that ran, or was blocked, and how it ended."""

    tool_name: str
    args: dict[str, Any]
    # The first RESULT_SUMMARY_MAX_CHARS of the output on success, of the JSON error otherwise.
    result_summary: str
    ok: bool
    error: str | None


class LlmCallInfo(TypedDict):
    """`before_llm_call`: the 1-based turn and a copy of the history as plain dicts."""

    turn: int
    messages: list[dict[str, Any]]


class RunStartInfo(TypedDict):
    """`on_run_start`: the length of the prompt in characters."""

    input_chars: int


class RunEndInfo(TypedDict):
    """`on_run_end`: why the loop stopped and how many model turns it used."""

    stopped_reason: str
    turns_used: int


# Any hook's payload.
HookInfo = ToolCallInfo | ToolResultInfo | LlmCallInfo | RunStartInfo | RunEndInfo

# The payload type (a TypedDict) each hook receives.
HOOK_PAYLOADS: Mapping[str, type[Any]] = {
    "before_tool_call": ToolCallInfo,
    "after_tool_call": ToolResultInfo,
    "before_llm_call": LlmCallInfo,
    "on_run_start": RunStartInfo,
    "on_run_end": RunEndInfo,
}

# A hook is `hook(info, ctx: PluginContext)`, sync or async; `info` is its hook's HOOK_PAYLOADS
# dict, so the first parameter is Any: a hook annotated with its own payload type fits.
Hook = Callable[[Any, "PluginContext"], Any]


@dataclass
class Plugin:
    """The object a plugin module exports as `plugin` (or `PLUGIN`).

    `hooks` maps hook names (HOOK_NAMES) to callables; `tools` are Tool objects (FunctionTool is
    the easy way) merged into the agent's registry.
    """

    name: str
    tools: Sequence[Tool] = ()
    hooks: Mapping[str, Hook] = field(default_factory=dict)


class ModelRoleNotGranted(PermissionError):
    pass


class PluginModels:
    """`models.chat(role, messages)` for one plugin: only the roles its config entry granted."""

    def __init__(self, plugin_name: str, granted: frozenset[str]) -> None:
        self.plugin_name = plugin_name
        self.granted = granted
        self._resolve: Callable[[str], Any] | None = None

    def bind(self, resolve: Callable[[str], Any]) -> None:
        self._resolve = resolve

    async def chat(
        self,
        role: str,
        messages: Sequence[Message | Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
    ) -> ModelResponse:
        if role not in self.granted:
            granted = ", ".join(sorted(self.granted)) or "none"
            raise ModelRoleNotGranted(
                f"model_role_not_granted: plugin {self.plugin_name!r} may not call role {role!r} "
                f'(granted: {granted}; add it to the plugin entry\'s "models")'
            )
        model = self._resolve(role) if self._resolve is not None else None
        if model is None:
            raise ModelRoleNotGranted(f"model_unavailable: no model for role {role!r}")
        converted = [m if isinstance(m, Message) else Message.from_dict(dict(m)) for m in messages]
        return await model.complete(converted, [])


@dataclass
class PluginContext:
    """The `ctx` every hook of one plugin receives during one run."""

    name: str
    work_dir: Path
    state: dict[str, Any]  # this plugin's per-run bag, fresh for every run
    settings: Mapping[str, Any]  # frozen (types.MappingProxyType)
    models: PluginModels
