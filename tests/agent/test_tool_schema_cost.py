"""What each request costs in tool schemas (#35): concise descriptions, the shared formats said
once in the system prompt, and a tool the task cannot use (git_commit without
LICH_ALLOW_SELF_COMMIT=1) not offered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_model import ScriptedModel, Turn

from lich_core.agent.loop import Agent
from lich_core.config import load_config
from lich_core.hashline.anchors import line_hash
from lich_core.runtime import build_tool_runtime
from tests.support.cli_runner import run_lich_subprocess

# The target for the tool schemas one request carries with the default config.
TOOL_SCHEMAS_CEILING_BYTES = 8 * 1024
PATCH_RULE = "apply_patch format:"


def _agent(tmp_path: Path, model: ScriptedModel, **overrides: object) -> Agent:
    env = {"HOME": str(tmp_path / "home")}
    config = load_config(tmp_path, overrides=dict(overrides), env=env)
    runtime = build_tool_runtime(config, env=env)
    return Agent(model=model, runtime=runtime, config=config)


def _schemas_bytes(tools: list[dict]) -> int:
    return len(json.dumps(tools, ensure_ascii=False).encode("utf-8"))


def test_a_one_edit_task_over_the_cli_sends_small_schemas_and_the_patch_format_once(
    tmp_path, fake_provider, monkeypatch
):
    monkeypatch.delenv("LICH_ALLOW_SELF_COMMIT", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    anchor = f"2:{line_hash('    return a - b')}"
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {
            "tool_calls": [
                {
                    "name": "apply_patch",
                    "arguments": {
                        "input": f"@@ calc.py\n= {anchor}..{anchor}\n~    return a + b\n"
                    },
                }
            ]
        },
        {"text": "Fixed add."},
    )
    done = run_lich_subprocess(
        "run",
        "fix add",
        "--work-dir",
        str(work),
        "--provider-kind",
        "openai_compat",
        "--base-url",
        fake_provider.url + "/v1",
        "--model",
        "fake-model",
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    # The model got what it needed: the patch built from the system prompt's format applied.
    assert (work / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert len(fake_provider.requests) == 3
    for request in fake_provider.requests:
        body = request["json"]
        tools = [tool["function"] for tool in body["tools"]]
        names = {tool["name"] for tool in tools}
        assert {"read_file", "apply_patch", "terminal"} <= names
        assert "git_commit" not in names
        assert _schemas_bytes(tools) <= TOOL_SCHEMAS_CEILING_BYTES
        patch_tool = next(tool for tool in tools if tool["name"] == "apply_patch")
        assert "@@ PATH" not in patch_tool["description"]
        system = [m["content"] for m in body["messages"] if m["role"] == "system"]
        assert len(system) == 1 and system[0].count(PATCH_RULE) == 1
        assert "`@@ PATH`" in system[0] and "LINE:HH|content" in system[0]


def test_git_commit_is_offered_only_when_self_commit_is_allowed(tmp_path, monkeypatch):
    monkeypatch.delenv("LICH_ALLOW_SELF_COMMIT", raising=False)
    model = ScriptedModel(Turn(text="ok"))
    assert "git_commit" not in {d.name for d in _agent(tmp_path, model).tool_definitions()}
    monkeypatch.setenv("LICH_ALLOW_SELF_COMMIT", "1")
    assert "git_commit" in {d.name for d in _agent(tmp_path, model).tool_definitions()}


async def test_a_custom_system_prompt_keeps_the_tool_rules(tmp_path):
    model = ScriptedModel(Turn(text="ok"))
    await _agent(tmp_path, model, system_prompt="You are terse.").run("x")
    system = model.calls[0][0].content
    assert system.startswith("You are terse.\n\n") and system.count(PATCH_RULE) == 1


@pytest.mark.parametrize(
    ("enabled", "has_anchors", "has_patch"),
    [(["terminal"], False, False), (["read_file"], True, False), (["apply_patch"], True, True)],
)
async def test_only_the_rules_of_offered_tools_join_the_prompt(
    tmp_path, enabled, has_anchors, has_patch
):
    model = ScriptedModel(Turn(text="ok"))
    await _agent(tmp_path, model, tools_enabled=enabled).run("x")
    system = model.calls[0][0].content
    assert ("Line anchors:" in system) is has_anchors
    assert (PATCH_RULE in system) is has_patch
