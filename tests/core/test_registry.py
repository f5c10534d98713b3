"""ToolRegistry: duplicates fail loudly, definitions for providers, toolsets, filtered subsets."""

from __future__ import annotations

from typing import Any

import pytest

from lich_core.errors import ToolError
from lich_core.tools.builtin import builtin_tools, register_builtin_tools
from lich_core.tools.registry import ToolRegistry, Toolset, is_enabled
from lich_core.tools.types import FunctionTool, Tool, ToolContext, ToolDefinition, ToolResult


async def _ok(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(ok=True)


def make_tool(name: str) -> FunctionTool:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    return FunctionTool(name=name, description=f"the {name} tool", parameters=schema, run=_ok)


def test_duplicate_registration_fails_with_prefix() -> None:
    registry = ToolRegistry([make_tool("a")])
    with pytest.raises(ToolError, match=r"^duplicate_tool: a$"):
        registry.register(make_tool("a"))
    with pytest.raises(ToolError, match=r"^duplicate_tool: b$"):
        ToolRegistry([make_tool("b"), make_tool("b")])


def test_definitions_keep_order_and_json_schema_spelling() -> None:
    registry = ToolRegistry([make_tool("first"), make_tool("second")])
    definitions = registry.definitions()
    assert [d.name for d in definitions] == ["first", "second"]
    assert definitions[0] == ToolDefinition(
        "first",
        "the first tool",
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
    )
    assert definitions[0].to_dict()["parameters"]["required"] == ["x"]


def test_lookup_and_membership() -> None:
    tool = make_tool("a")
    registry = ToolRegistry([tool])
    assert registry.get("a") is tool and registry.get("zz") is None
    assert "a" in registry and "zz" not in registry and len(registry) == 1


def test_toolset_registers_together() -> None:
    registry = ToolRegistry()
    registry.register_toolset(Toolset("files", [make_tool("r"), make_tool("w")]))
    assert registry.names() == ["r", "w"]
    with pytest.raises(ToolError, match="duplicate_tool: r"):
        registry.register_toolset(Toolset("again", [make_tool("r")]))


def test_filtered_all_returns_same_registry_and_list_a_fresh_one() -> None:
    registry = ToolRegistry([make_tool("a"), make_tool("b"), make_tool("c")])
    assert registry.filtered("all") is registry
    subset = registry.filtered(["c", "a", "unknown"])
    assert subset is not registry
    assert subset.names() == ["a", "c"]  # base order, unknown names ignored
    assert registry.names() == ["a", "b", "c"]  # the base is untouched
    assert registry.filtered([]).names() == []


def test_is_enabled() -> None:
    assert is_enabled("all", "x")
    assert is_enabled(["x"], "x") and not is_enabled(["y"], "x")


def test_builtin_catalog_registers_without_clashes() -> None:
    registry = register_builtin_tools(ToolRegistry())
    names = registry.names()
    for name in ("write_file", "edit_file", "list_dir", "find_files"):
        assert name in names
    for tool in builtin_tools():
        assert isinstance(tool, Tool)
        assert tool.parameters.get("type") == "object"
    capabilities = {tool.name: getattr(tool, "capability", None) for tool in builtin_tools()}
    assert capabilities["write_file"] == "file/write"
    assert capabilities["edit_file"] == "file/edit"
    assert capabilities["list_dir"] == "file/read"
    assert capabilities["find_files"] == "file/read"


def test_every_builtin_declares_one_known_capability() -> None:
    from lich_core.tools.types import CAPABILITIES

    expected = {
        "read_file": "file/read",
        "grep_files": "file/read",
        "find_files": "file/read",
        "list_dir": "file/read",
        "disk_usage": "file/read",
        "apply_patch": "file/edit",
        "edit_file": "file/edit",
        "write_file": "file/write",
        "terminal": "process/exec",
        "process_list": "process/exec",
        "env_get": "process/exec",
    }
    declared = {tool.name: getattr(tool, "capability", None) for tool in builtin_tools()}
    assert {name: declared.get(name) for name in expected} == expected
    # A builtin added later must be gated too: an ungated tool would run under `capabilities: []`.
    assert all(capability in CAPABILITIES for capability in declared.values()), declared
