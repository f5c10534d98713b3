"""MCP (Model Context Protocol) servers as tool sources.

- spec.py: the `mcp_servers` config entries, their validation and the refusal rules (no SDK import).
- tools.py: MCP tools as lich tools (names, schemas, result conversion; no SDK import).
- manager.py: McpManager, the connections of one tool runtime (imports the `mcp` SDK, which takes
  a while: it is imported only when a runtime has servers configured).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lich_core.mcp.spec import McpServerSpec, mcp_effects, refusal, specs_from_config, v_mcp_servers

if TYPE_CHECKING:
    from lich_core.mcp.manager import McpManager

__all__ = [
    "McpManager",
    "McpServerSpec",
    "mcp_effects",
    "refusal",
    "specs_from_config",
    "v_mcp_servers",
]


def __getattr__(name: str) -> Any:
    if name == "McpManager":
        from lich_core.mcp.manager import McpManager

        return McpManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
