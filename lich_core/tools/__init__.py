"""Tool runtime: contract (types), safety helpers (guard.py), executor, registry, capability gates, builtins."""

from lich_core.tools.types import Tool, ToolContext
from lich_core.vocabulary import CancelToken, ToolDefinition, ToolResult

__all__ = ["CancelToken", "Tool", "ToolContext", "ToolDefinition", "ToolResult"]
