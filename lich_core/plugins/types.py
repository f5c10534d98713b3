"""What a plugin module exports and what its hooks and tools receive."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

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


class HookInfo(Mapping[str, Any]):
    """The read-only dict view every hook payload has over its fields.

    Plugins written when hooks got a plain dict (`info["tool_name"]`, `info.get("ok")`,
    `dict(info)`, `info == {...}`) keep working unchanged; new code reads attributes.
    """

    def __getitem__(self, key: str) -> Any:
        if key in self._names():
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))  # type: ignore[arg-type]


# eq=False on each payload: Mapping's __eq__ compares like a dict, as the old payloads did.
@dataclass(frozen=True, eq=False)
class ToolCallInfo(HookInfo):
    """`before_tool_call`: the call about to run (a copy of its arguments)."""

    tool_name: str
    args: dict[str, Any]


@dataclass(frozen=True, eq=False)
class ToolResultInfo(HookInfo):
    """`after_tool_call`: the call that ran, or was blocked, and how it ended."""

    tool_name: str
    args: dict[str, Any]
    # The first RESULT_SUMMARY_MAX_CHARS of the output on success, of the JSON error otherwise.
    result_summary: str
    ok: bool
    error: str | None


@dataclass(frozen=True, eq=False)
class LlmCallInfo(HookInfo):
    """`before_llm_call`: the 1-based turn and a copy of the history as plain dicts."""

    turn: int
    messages: list[dict[str, Any]]


@dataclass(frozen=True, eq=False)
class RunStartInfo(HookInfo):
    """`on_run_start`: the length of the prompt in characters."""

    input_chars: int


@dataclass(frozen=True, eq=False)
class RunEndInfo(HookInfo):
    """`on_run_end`: why the loop stopped and how many model turns it used."""

    stopped_reason: str
    turns_used: int


# The payload type each hook receives.
HOOK_PAYLOADS: Mapping[str, type[HookInfo]] = {
    "before_tool_call": ToolCallInfo,
    "after_tool_call": ToolResultInfo,
    "before_llm_call": LlmCallInfo,
    "on_run_start": RunStartInfo,
    "on_run_end": RunEndInfo,
}

# A hook is `hook(info, ctx: PluginContext)`, sync or async; `info` is its hook's HOOK_PAYLOADS
# type, so the first parameter is Any: a hook annotated with its own payload type fits.
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
