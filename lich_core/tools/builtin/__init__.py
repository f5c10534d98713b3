"""The builtin tool catalog: one module per tool, each exporting `TOOL`.

Modules are discovered in this package, so adding a tool is adding a file. `CATALOG_ORDER` only
fixes the order definitions are listed in (providers show tools in that order).
"""

from __future__ import annotations

import importlib
import pkgutil

from lich_core.tools.registry import ToolRegistry, Toolset
from lich_core.tools.types import Tool

CATALOG_ORDER = (
    "read_file",
    "grep_files",
    "find_files",
    "list_dir",
    "apply_patch",
    "write_file",
    "edit_file",
    "terminal",
    "process_list",
    "disk_usage",
    "env_get",
    "fetch_url",
    "http_request",
    "web_search",
    "run_tests",
    "docs_search",
    "docs_read",
    "memory_append",
    "python_eval",
)


def builtin_tools() -> list[Tool]:
    modules = [
        info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")
    ]
    rank = {name: index for index, name in enumerate(CATALOG_ORDER)}
    modules.sort(key=lambda name: (rank.get(name, len(rank)), name))
    tools: list[Tool] = []
    for name in modules:
        module = importlib.import_module(f"{__name__}.{name}")
        tool = getattr(module, "TOOL", None)
        if tool is not None:
            tools.append(tool)
    return tools


def builtin_toolset() -> Toolset:
    return Toolset("builtin", builtin_tools())


def register_builtin_tools(registry: ToolRegistry) -> ToolRegistry:
    registry.register_toolset(builtin_toolset())
    return registry
