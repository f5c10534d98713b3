"""Fixtures for the MCP tests: runtimes that are always closed, and the agent test helpers."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.support.xdist_groups import group_folder

# The scripted model lives beside the agent tests (no package there, by convention).
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agent")
)

from lich_core.config import Config  # noqa: E402
from lich_core.runtime import ToolRuntime  # noqa: E402
from tests.mcp.mcp_support import make_runtime  # noqa: E402

MCP_GROUP = "mcp"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The MCP tests share one pytest-xdist worker (`--dist loadgroup`): the MCP SDK they need in
    the worker (~0.8 s of CPU to import) is then imported by that one only. The modules import it
    inside the tests that use it, since every worker collects them."""
    group_folder(items, "tests/mcp/", MCP_GROUP)


@pytest.fixture
async def runtimes() -> AsyncIterator[Callable[..., ToolRuntime]]:
    """`runtimes(config, env=None)` builds a tool runtime that is closed after the test."""
    made: list[ToolRuntime] = []

    def build(config: Config, env: dict[str, str] | None = None, **_: Any) -> ToolRuntime:
        runtime = make_runtime(config, env)
        made.append(runtime)
        return runtime

    yield build
    for runtime in made:
        await runtime.aclose()
