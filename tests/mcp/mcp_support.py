"""Helpers for the MCP tests: the test servers, configs, agents and runtimes that close."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lich_core.agent.factory import build_agent
from lich_core.agent.loop import Agent, RunResult
from lich_core.config import Config, load_config
from lich_core.runtime import ToolRuntime, build_tool_runtime
from tests.support.processes import pid_alive  # noqa: F401 - the MCP tests import it from here

SERVERS = Path(__file__).resolve().parent / "servers"
BASIC_SERVER = str(SERVERS / "basic_server.py")
SILENT_SERVER = str(SERVERS / "silent_server.py")
LEGACY_SERVER = str(SERVERS / "legacy_server.py")
# The stdlib server with basic_server.py's process tools (crash, exit_soon, hang, spawn_child...).
PLAIN_SERVER = str(SERVERS / "plain_server.py")
# How many tools basic_server.py has without options; plain_server.py's.
BASIC_TOOLS = 11
PLAIN_TOOLS = 7
# Bounds what a test waits for (generous for a loaded machine; it only decides how soon a broken
# test fails).
WAIT_S = 60.0


def stdio_entry(*args: str, script: str = BASIC_SERVER, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [script, *args], **extra}


def make_config(work_dir: Path, mcp_servers: dict[str, Any], **overrides: Any) -> Config:
    return load_config(
        work_dir,
        overrides={"mcp_servers": mcp_servers, **overrides},
        env={
            "HOME": str(work_dir / "_home"),
            "XDG_CONFIG_HOME": str(work_dir / "_home" / ".config"),
        },
    )


def make_runtime(config: Config, env: dict[str, str] | None = None) -> ToolRuntime:
    return build_tool_runtime(config, env=env)


def make_agent(config: Config, model: Any, runtime: ToolRuntime) -> Agent:
    return build_agent(config, model=model, runtime=runtime)


def tool_outputs(result: RunResult) -> list[str]:
    """What the model read back from each tool call, in order."""
    return [str(message.content) for message in result.messages if message.role == "tool"]


@asynccontextmanager
async def http_server(*args: str) -> AsyncIterator[tuple[int, asyncio.subprocess.Process]]:
    """basic_server.py over streamable HTTP on 127.0.0.1: yields (port, process); killed after."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        BASIC_SERVER,
        "--http",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        # The server prints its port once the socket listens: connections queue from then on.
        line = await asyncio.wait_for(process.stdout.readline(), WAIT_S)
        assert line.startswith(b"PORT "), line
        yield int(line.split()[1]), process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
