"""Running loaded plugins: tool registration and the five hooks, each failure isolated.

Each hook call gets a fresh plain dict (its TypedDict in types.HOOK_PAYLOADS), deep-copied from
what lich holds: a plugin may copy, serialise or annotate it, and nothing it changes reaches the
arguments a tool runs with, the result the model reads, the history or another plugin's hook.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import types
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.plugins.types import (
    HOOK_PAYLOADS,
    NOTE_MAX_CHARS,
    RESULT_SUMMARY_MAX_CHARS,
    HookInfo,
    LlmCallInfo,
    Plugin,
    PluginContext,
    PluginModels,
    RunEndInfo,
    RunStartInfo,
    ToolCallInfo,
    ToolResultInfo,
)
from lich_core.tools.registry import is_enabled
from lich_core.tools.types import Tool, ToolContext
from lich_core.vocabulary import Message, ToolResult, format_tool_result

log = logging.getLogger("lich.plugins")

# Called with (plugin name, message) for every isolated failure; the agent turns it into an event.
WarnFn = Callable[[str, str], Awaitable[None]]

BLOCK_PREFIX = "blocked_by_plugin"
NO_REASON = "plugin-less"
HOOK_ERROR = "hook_error"


@dataclass
class LoadedPlugin:
    plugin: Plugin
    path: Path
    settings: Mapping[str, Any]  # types.MappingProxyType
    models: PluginModels
    # Constructed in code (the gatekeeper), not loaded from config; registered before config plugins.
    builtin: bool = False

    @property
    def name(self) -> str:
        return self.plugin.name

    @classmethod
    def built_in(cls, plugin: Plugin, path: Path | None = None) -> LoadedPlugin:
        """A plugin made in code: no settings, no model roles, ahead of every config plugin."""
        return cls(
            plugin=plugin,
            path=path or Path("<builtin>"),
            settings=types.MappingProxyType({}),
            models=PluginModels(plugin.name, frozenset()),
            builtin=True,
        )

    def hook(self, name: str) -> Callable[..., Any] | None:
        return self.plugin.hooks.get(name)


class PluginTool:
    """A plugin's tool as registered: its context carries the plugin's settings and models."""

    def __init__(self, tool: Tool, owner: LoadedPlugin) -> None:
        self.inner = tool
        self.owner = owner
        self.name = tool.name
        self.description = tool.description
        self.parameters = tool.parameters
        self.capability = getattr(tool, "capability", None)
        self.timeout_ms = getattr(tool, "timeout_ms", None)
        # Runs only inside an agent task (git_commit): lich.runTool refuses it.
        self.agent_only = getattr(tool, "agent_only", False) is True

    @property
    def offered(self) -> bool:
        # Asked at each tool-list build, not copied: the inner tool decides (git_commit).
        return getattr(self.inner, "offered", True) is not False

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        plugin_ctx = copy.copy(ctx)
        # A plugin's tool reads its own entry's settings here (docs/plugins.md), not lich's:
        # the one place a context's settings are a plain frozen mapping.
        plugin_ctx.settings = self.owner.settings  # type: ignore[assignment]
        plugin_ctx.models = self.owner.models  # type: ignore[attr-defined]
        return await self.inner.execute(args, plugin_ctx)


class PluginHost:
    """The plugins of one agent: built-in ones first, then config order; plus the load warnings."""

    def __init__(
        self,
        plugins: Sequence[LoadedPlugin] = (),
        warnings: Sequence[str] = (),
        *,
        work_dir: Path | None = None,
    ) -> None:
        # Built-in plugins (LoadedPlugin.builtin) come first whatever order they were given in:
        # their hooks run first and their tools win a name clash.
        self.plugins = [p for p in plugins if p.builtin] + [p for p in plugins if not p.builtin]
        self.warnings = list(warnings)
        self.work_dir = Path(work_dir or Path.cwd())

    def names(self) -> list[str]:
        """The plugins loaded from config, in config order (built-in ones: builtin_names)."""
        return [p.name for p in self.plugins if not p.builtin]

    def builtin_names(self) -> list[str]:
        return [p.name for p in self.plugins if p.builtin]

    def bind_models(self, resolve: Callable[[str], Any]) -> None:
        for loaded in self.plugins:
            loaded.models.bind(resolve)

    def register_tools(self, runtime: Any, tools_enabled: str | Sequence[str] = "all") -> list[str]:
        """Add plugin tools to a ToolRuntime, after its tools_enabled filter was applied.

        A plugin tool becomes callable only when tools_enabled is "all" or names it. A name
        already taken (a builtin, enabled or not, or an earlier plugin's tool) is skipped with a
        warning. Returns the new warnings (also kept in `self.warnings`).
        """
        new_warnings: list[str] = []
        base = runtime.base_registry
        enabled = runtime.registry
        for loaded in self.plugins:
            for tool in loaded.plugin.tools:
                if tool.name in base:
                    message = f"plugin {loaded.name!r}: duplicate_tool: {tool.name} is already registered; tool skipped"
                    new_warnings.append(message)
                    log.debug(message)  # reported with the load errors' one summary
                    continue
                wrapped = PluginTool(tool, loaded)
                base.register(wrapped)
                if enabled is not base and is_enabled(tools_enabled, tool.name):
                    enabled.register(wrapped)
        self.warnings.extend(new_warnings)
        return new_warnings

    def start_run(self, warn: WarnFn | None = None) -> PluginRun:
        return PluginRun(self, warn)


class PluginRun:
    """Hooks for one run: fresh per-plugin state, failures reported through `warn`."""

    def __init__(self, host: PluginHost, warn: WarnFn | None) -> None:
        self.host = host
        self._warn = warn
        self.contexts = {
            loaded.name: PluginContext(
                name=loaded.name,
                work_dir=host.work_dir,
                state={},
                settings=loaded.settings,
                models=loaded.models,
            )
            for loaded in host.plugins
        }

    def has_hook(self, hook_name: str) -> bool:
        """Whether any plugin has this hook (the loop skips awaiting hooks nobody has)."""
        return any(loaded.hook(hook_name) is not None for loaded in self.host.plugins)

    def _with_hook(self, hook_name: str) -> list[tuple[LoadedPlugin, Callable[..., Any]]]:
        found = []
        for loaded in self.host.plugins:
            hook = loaded.hook(hook_name)
            if hook is not None:
                found.append((loaded, hook))
        return found

    async def _call(self, loaded: LoadedPlugin, hook: Callable[..., Any], info: HookInfo) -> Any:
        # A copy for this one hook: what it changes in its dict stays in its dict.
        outcome = hook(copy.deepcopy(info), self.contexts[loaded.name])
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome

    async def _report(self, loaded: LoadedPlugin, hook_name: str, err: BaseException) -> None:
        message = f"plugin {loaded.name!r}: {hook_name} raised {type(err).__name__}: {err}"
        attr = getattr(err, "name", None) if isinstance(err, AttributeError) else None
        if isinstance(attr, str) and attr in _PAYLOAD_FIELDS.get(hook_name, ()):
            # A hook written for the typed payloads of #34 (info.tool_name): say how to read it.
            message += f' (hook payloads are plain dicts: read info["{attr}"])'
        log.warning(message)
        if self._warn is not None:
            await self._warn(loaded.name, message)

    async def _observe(self, hook_name: str, info: HookInfo) -> None:
        for loaded, hook in self._with_hook(hook_name):
            try:
                await self._call(loaded, hook, info)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - a throwing observer is skipped
                await self._report(loaded, hook_name, err)

    async def on_run_start(self, input_chars: int) -> None:
        await self._observe("on_run_start", RunStartInfo(input_chars=input_chars))

    async def on_run_end(self, stopped_reason: str, turns_used: int) -> None:
        await self._observe(
            "on_run_end", RunEndInfo(stopped_reason=stopped_reason, turns_used=turns_used)
        )

    async def before_tool_call(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """The error string for a vetoed call (first block wins), or None to let it run."""
        for loaded, hook in self._with_hook("before_tool_call"):
            try:
                verdict = await self._call(
                    loaded, hook, ToolCallInfo(tool_name=tool_name, args=args)
                )
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - a broken hook blocks, it never allows
                await self._report(loaded, "before_tool_call", err)
                return f"{BLOCK_PREFIX}: {HOOK_ERROR}"
            if _get(verdict, "block"):
                reason = _get(verdict, "reason")
                return f"{BLOCK_PREFIX}: {reason if isinstance(reason, str) and reason.strip() else NO_REASON}"
        return None

    async def after_tool_call(
        self, tool_name: str, args: dict[str, Any], result: ToolResult
    ) -> None:
        summary = result.output if result.ok else format_tool_result(result)
        info = ToolResultInfo(
            tool_name=tool_name,
            args=args,
            result_summary=summary[:RESULT_SUMMARY_MAX_CHARS],
            ok=result.ok,
            error=result.error,
        )
        await self._observe("after_tool_call", info)

    async def before_llm_call(self, turn: int, messages: Sequence[Message]) -> list[Message]:
        """Trailing system notes for this one model call (never saved to history)."""
        hooks = self._with_hook("before_llm_call")
        if not hooks:
            return []
        notes: list[Message] = []
        plain = [m.to_dict() for m in messages]
        for loaded, hook in hooks:
            try:
                verdict = await self._call(loaded, hook, LlmCallInfo(turn=turn, messages=plain))
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001
                await self._report(loaded, "before_llm_call", err)
                continue
            note = _get(verdict, "note")
            if isinstance(note, str) and note.strip():
                notes.append(
                    Message(
                        role="system", content=f"[plugin {loaded.name}] {note[:NOTE_MAX_CHARS]}"
                    )
                )
        return notes


# Each hook's payload keys, for the hint on a hook that reads them as attributes.
_PAYLOAD_FIELDS: dict[str, frozenset[str]] = {
    name: frozenset(payload.__annotations__) for name, payload in HOOK_PAYLOADS.items()
}


def _get(verdict: Any, key: str) -> Any:
    if isinstance(verdict, Mapping):
        return verdict.get(key)
    return getattr(verdict, key, None) if verdict is not None else None
