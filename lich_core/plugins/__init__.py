"""Python plugins: extra tools and lifecycle hooks loaded from files listed in config `plugins`.

See docs/plugins.md. Plugins are trusted code: they run in-process with the agent's privileges.
"""

from lich_core.plugins.host import LoadedPlugin, PluginHost, PluginRun, PluginTool
from lich_core.plugins.loader import load_plugins
from lich_core.plugins.types import HOOK_NAMES, MODEL_ROLES, Plugin, PluginContext, PluginModels

__all__ = [
    "HOOK_NAMES",
    "MODEL_ROLES",
    "LoadedPlugin",
    "Plugin",
    "PluginContext",
    "PluginHost",
    "PluginModels",
    "PluginRun",
    "PluginTool",
    "load_plugins",
]
