"""Python plugins: extra tools and lifecycle hooks loaded from files listed in config `plugins`.

See docs/plugins.md. Plugins are trusted code: they run in-process with the agent's privileges.
"""

from lich_core.plugins.host import LoadedPlugin, PluginHost, PluginRun, PluginTool
from lich_core.plugins.loader import load_plugins
from lich_core.plugins.types import (
    HOOK_NAMES,
    HOOK_PAYLOADS,
    MODEL_ROLES,
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

__all__ = [
    "HOOK_NAMES",
    "HOOK_PAYLOADS",
    "MODEL_ROLES",
    "HookInfo",
    "LlmCallInfo",
    "LoadedPlugin",
    "Plugin",
    "PluginContext",
    "PluginHost",
    "PluginModels",
    "PluginRun",
    "PluginTool",
    "RunEndInfo",
    "RunStartInfo",
    "ToolCallInfo",
    "ToolResultInfo",
    "load_plugins",
]
