"""One tool runtime per config generation: plugin modules run once, shared by lich.ask and the commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from lsprotocol import types

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

COUNTING_PLUGIN = """\
from pathlib import Path

from lich_core.plugins import Plugin
from lich_core.tools.types import FunctionTool, ToolResult

IMPORTS = Path(__file__).with_name("imports.log")
with IMPORTS.open("a") as log:
    log.write("imported\\n")
calls = 0


async def tick(args, ctx):
    global calls
    calls += 1
    return ToolResult(ok=True, output=f"tick {calls}")


plugin = Plugin(name="counter", tools=[FunctionTool("tick", "Count.", {"type": "object", "properties": {}}, tick)])
"""


async def test_plugins_load_once_per_config_and_share_state(session, root: Path, tmp_path: Path, fake_provider) -> None:
    plugin_dir = tmp_path / "user-plugins"
    plugin_dir.mkdir()
    (plugin_dir / "counter.py").write_text(COUNTING_PLUGIN, encoding="utf-8")
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    provider = {"name": "fake", "kind": "openai_compat", "base_url": fake_provider.url + "/v1", "model": "m"}
    user_config.write_text(json.dumps({"plugins": [str(plugin_dir / "counter.py")], "providers": [provider]}), encoding="utf-8")
    client = await session("visual-studio-code")
    first = await client.command("lich.runTool", {"name": "tick", "args": {}})
    assert first["output"] == "tick 1"
    for _ in range(10):
        fake_provider.script({"tool_calls": [{"name": "tick", "arguments": {}}]}, {"text": "ok"})
        result = await client.command("lich.ask", {"prompt": "tick"})
        assert result["stopped_reason"] == "final", result
    last = await client.command("lich.runTool", {"name": "tick", "args": {}})
    assert last["output"] == "tick 12"  # the asks' calls counted in the same module
    assert (plugin_dir / "imports.log").read_text(encoding="utf-8") == "imported\n"
    # A new config generation loads the plugin again, once.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"lich": {"max_turns": 7}}))
    await client.wait_for_status(lambda status: status["config_error"] is None and status["tasks"] is not None)
    await client.command("lich.tools", {})
    await client.command("lich.tools", {})
    assert (plugin_dir / "imports.log").read_text(encoding="utf-8").count("imported") == 2
