"""Tool runtime: contract (types), guards, executor, registry, capability gates, builtins."""

from lich_core.tools.types import CancelToken, Tool, ToolContext, ToolDefinition, ToolResult

__all__ = ["CancelToken", "Tool", "ToolContext", "ToolDefinition", "ToolResult"]
