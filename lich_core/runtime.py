"""Build the tool runtime from a config: the registry and executor (lich_core.tools), the built-in
gatekeeper and the config's plugins (lich_core.plugins), and the MCP servers (lich_core.mcp).

Shared by the CLI, the agent and both faces. It sits above the packages it assembles: none of
them imports it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lich_core.gatekeeper import build_gatekeeper
from lich_core.mcp.spec import McpServerSpec, specs_from_config
from lich_core.plugins import LoadedPlugin
from lich_core.plugins import load_plugins as load_plugin_host
from lich_core.settings import Settings, settings_of
from lich_core.tools.builtin import register_builtin_tools
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import CallCheck, ToolExecutor
from lich_core.tools.registry import ToolRegistry, is_enabled
from lich_core.tools.secrets import configured_key_env_names, scrubbed_env
from lich_core.tools.types import ToolContext, WebSearchBackend, tool_capability
from lich_core.trust import TrustStore, agent_writes_refusal
from lich_core.vocabulary import CancelToken

if TYPE_CHECKING:
    from lich_core.mcp.manager import McpManager

log = logging.getLogger("lich.tools")

# The variable through which the tools' processes see config terminal_timeout_ms.
TERMINAL_TIMEOUT_ENV = "LICH_TERMINAL_TIMEOUT_MS"


@dataclass
class ToolRuntime:
    """Everything needed to run tool calls for one work dir."""

    base_registry: ToolRegistry  # every builtin (and plugin) tool, enabled or not
    registry: ToolRegistry  # the enabled subset
    executor: ToolExecutor
    config: Mapping[str, Any]
    # The plugin host (lich_core.plugins.PluginHost): the built-in gatekeeper first, then the
    # plugins from config["plugins"]; their hooks run in the agent loop. build_tool_runtime always
    # sets it; None only for a runtime assembled by hand.
    plugins: Any = None
    # The MCP servers of config["mcp_servers"] (lich_core.mcp.McpManager); None when there are
    # none. It lives as long as the runtime: whoever drops the runtime awaits aclose().
    mcp: McpManager | None = None
    _mcp_tools_seen: int = field(default=0, init=False, repr=False)

    async def ensure_mcp(self, cancel: CancelToken | None = None) -> list[str]:
        """Attach the MCP servers that need it (first run, or failed since) and register their
        new tools; returns the names registered now.

        Cheap when there is nothing to do; safe to call from concurrent runs (they share one
        attach). Never raises (CancelledError aside); stops waiting when `cancel` fires.
        MCP tools join `base_registry`, and the enabled registry only when tools_enabled is
        "all" or names them (as plugin tools do).
        """
        manager = self.mcp
        if manager is None:
            return []
        if manager.needs_attach():
            try:
                await manager.attach(cancel)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - MCP trouble must not stop the run
                log.exception("MCP attach failed")
        if manager.tools_made == self._mcp_tools_seen:
            return []
        return self._register_mcp_tools(manager)

    def _register_mcp_tools(self, manager: McpManager) -> list[str]:
        tools_enabled = settings_of(self.config).tools_enabled
        base = self.base_registry
        enabled = self.registry
        added: list[str] = []
        tools = manager.tools()
        for tool in tools:
            if tool.name in base:
                continue
            base.register(tool)
            if enabled is not base and is_enabled(tools_enabled, tool.name):
                enabled.register(tool)
            added.append(tool.name)
        self._mcp_tools_seen = len(tools)
        return added

    async def aclose(self) -> None:
        """Release what the runtime holds: stops its MCP servers. Never raises."""
        if self.mcp is not None:
            try:
                await self.mcp.close()
            except Exception:  # noqa: BLE001
                log.exception("closing MCP servers failed")

    def context(self, **overrides: Any) -> ToolContext:
        ctx = self.executor.default_context()
        for key, value in overrides.items():
            setattr(ctx, key, value)
        return ctx

    def describe(self) -> list[dict[str, Any]]:
        """Every known tool with its capability and whether it can run.

        `selected`: named by tools_enabled; `granted`: its capability is granted; `enabled`:
        both, i.e. a call would run (a selected but ungranted tool answers `capability_denied:`).
        """
        described: list[dict[str, Any]] = []
        for tool in self.base_registry.list():
            capability = tool_capability(tool)
            selected = tool.name in self.registry
            granted = self.executor.gate.allows(capability)
            described.append(
                {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "capability": capability,
                    "selected": selected,
                    "granted": granted,
                    "enabled": selected and granted,
                }
            )
        return described


def build_tool_runtime(
    config: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    call_checks: Sequence[CallCheck] = (),
    load_plugins: bool = True,
) -> ToolRuntime:
    """Builtins filtered by tools_enabled, then plugin tools (registered after the filter), and
    the MCP manager when `mcp_servers` names any (its tools register on first use: ensure_mcp).

    The gatekeeper (lich_core.gatekeeper: `git_commit` and the terminal git denylist) is always
    registered, first, before the config plugins, and never from config; `load_plugins=False`
    skips only the config plugins. It reads LICH_ALLOW_SELF_COMMIT from the process environment
    now (not from `env`, which is what tools see).
    """
    settings = settings_of(config)
    work_dir = Path(settings.work_dir or os.getcwd())
    base = register_builtin_tools(ToolRegistry())
    registry = base.filtered(settings.tools_enabled)
    tool_env = scrubbed_env(os.environ if env is None else env, configured_key_env_names(settings))
    # The effective timeout, not the one lich was started with: a command or plugin tool that
    # runs commands of its own reads the configured value here (lich's seed injects it too).
    tool_env[TERMINAL_TIMEOUT_ENV] = str(settings.terminal_timeout_ms)
    executor = ToolExecutor(
        registry,
        gate=CapabilityGate(settings.capabilities),
        work_dir=work_dir,
        env=tool_env,
        settings=settings,
        call_checks=call_checks,
        terminal_timeout_ms=settings.terminal_timeout_ms,
        web_search=WebSearchBackend.from_config(settings.web_search),
    )
    runtime = ToolRuntime(base_registry=base, registry=registry, executor=executor, config=config)
    gatekeeper = LoadedPlugin.built_in(build_gatekeeper(os.environ).plugin)
    entries = list(settings.plugins) if load_plugins else None
    runtime.plugins = load_plugin_host(entries or None, work_dir=work_dir, builtins=[gatekeeper])
    runtime.plugins.register_tools(runtime, settings.tools_enabled)
    specs = specs_from_config(settings.mcp_servers)
    if specs:
        # Imported only now: the SDK takes a while to import.
        from lich_core.mcp.manager import McpManager

        # MCP tools register on first run (ensure_mcp), after the builtins and plugin tools,
        # whose names they never take.
        runtime.mcp = McpManager(
            specs,
            work_dir=work_dir,
            tool_env=tool_env,
            source_env=os.environ if env is None else env,
            reserved_names=base.names(),
            launch_check=_mcp_launch_check(settings, work_dir),
        )
    return runtime


def _mcp_launch_check(settings: Settings, work_dir: Path) -> Callable[[McpServerSpec], str | None]:
    """What each start of a stdio MCP server asks first (lich_core.trust): no server starts where
    an agent run without process/exec wrote files since the user's last yes (whoever configured
    it: any server started in the workspace can run the workspace's code), and a server the
    workspace config names starts only while that config's trust still holds (the language
    server reads its config once, so a file the server runs may have changed since)."""
    store = TrustStore.for_env()
    workspace_trust = settings.from_trusted_workspace("mcp_servers")

    def check(spec: McpServerSpec) -> str | None:
        refusal = agent_writes_refusal(
            store, work_dir, f"MCP server {spec.name} ({spec.command_line()})"
        )
        if refusal is None and workspace_trust is not None:
            refusal = workspace_trust.lapse(store)
        return refusal

    return check
