"""One tool runtime per config generation, in-process: plugin modules run once, shared by
lich.ask and the commands.

The EditorSession runs in the pytest process against the in-memory FakeEditor
(tests/lsp/fake_editor.py, the `editor` fixture), with the fake provider over real HTTP. The
plugin is imported into this process (lich_core.plugins.loader registers it in sys.modules as
`lich_plugin_<index>_<stem>`, a fresh module at every load); the test removes it afterwards.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

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
COUNTER_MODULE = "lich_plugin_0_counter"  # plugins[0], counter.py


@pytest.fixture(autouse=True)
def _forget_plugin_module() -> Iterator[None]:
    yield
    sys.modules.pop(COUNTER_MODULE, None)


async def test_plugins_load_once_per_config_and_share_state(
    editor, root: Path, tmp_path: Path, fake_provider
) -> None:
    plugin_dir = tmp_path / "user-plugins"
    plugin_dir.mkdir()
    (plugin_dir / "counter.py").write_text(COUNTING_PLUGIN, encoding="utf-8")
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    provider = {
        "name": "fake",
        "kind": "openai_compat",
        "base_url": fake_provider.url + "/v1",
        "model": "m",
    }
    user_config.write_text(
        json.dumps({"plugins": [str(plugin_dir / "counter.py")], "providers": [provider]}),
        encoding="utf-8",
    )
    fake = await editor("visual-studio-code")
    first = await fake.command("lich.runTool", {"name": "tick", "args": {}})
    assert first["output"] == "tick 1"
    first_module = sys.modules[COUNTER_MODULE]
    for _ in range(10):
        fake_provider.script({"tool_calls": [{"name": "tick", "arguments": {}}]}, {"text": "ok"})
        result = await fake.command("lich.ask", {"prompt": "tick"})
        assert result["stopped_reason"] == "final", result
    last = await fake.command("lich.runTool", {"name": "tick", "args": {}})
    assert last["output"] == "tick 12"  # the asks' calls counted in the same module
    assert (plugin_dir / "imports.log").read_text(encoding="utf-8") == "imported\n"
    assert sys.modules[COUNTER_MODULE] is first_module and first_module.calls == 12
    # A new config generation loads the plugin again, once.
    generation = (await fake.command("lich.status", {}))["config"]["generation"]
    await fake.change_settings({"lich": {"max_turns": 7}}, push=True)
    status = await fake.command("lich.status", {})
    assert status["config"]["generation"] == generation + 1
    assert status["config"]["problems"] == [] and status["config_error"] is None
    await fake.command("lich.tools", {})
    await fake.command("lich.tools", {})
    assert (plugin_dir / "imports.log").read_text(encoding="utf-8").count("imported") == 2
    assert sys.modules[COUNTER_MODULE] is not first_module  # a fresh module, not the cached one
