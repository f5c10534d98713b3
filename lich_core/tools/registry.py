"""Name-keyed tool registry: duplicates fail loudly, subsets are fresh registries."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lich_core.errors import ToolError
from lich_core.tools.types import Tool
from lich_core.vocabulary import ToolDefinition


@dataclass
class Toolset:
    """A named group of tools registered together (the builtins ship as one)."""

    name: str
    tools: Sequence[Tool] = field(default_factory=tuple)


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        # Bumped by every change, so a reader can keep what it derived from the tools until then.
        self.version = 0
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ToolError(f"duplicate_tool: {tool.name}")
        self._tools[tool.name] = tool
        self.version += 1

    def register_toolset(self, toolset: Toolset) -> None:
        for tool in toolset.tools:
            self.register(tool)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def list(self) -> list[Tool]:
        return list(self._tools.values())

    def definitions(self) -> builtins.list[ToolDefinition]:
        return [ToolDefinition(t.name, t.description, t.parameters) for t in self._tools.values()]

    def filtered(self, tools_enabled: str | Sequence[str]) -> ToolRegistry:
        """`"all"` returns this registry; a list returns a fresh one with only those names."""
        if tools_enabled == "all":
            return self
        allowed = set(tools_enabled)
        return ToolRegistry(t for t in self._tools.values() if t.name in allowed)


def is_enabled(tools_enabled: str | Sequence[str], name: str) -> bool:
    return tools_enabled == "all" or name in tools_enabled
