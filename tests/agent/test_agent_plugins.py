"""Plugins: loading with isolation, tool registration, and the five hooks, through the real loop."""

from __future__ import annotations

import json
import textwrap
import types
from pathlib import Path

import pytest
from agent_helpers import EventLog, RecordingTools, make_config, make_runtime
from scripted_model import ScriptedModel, Turn, call, tools_turn

from lich_core.agent.factory import build_agent
from lich_core.agent.loop import Agent
from lich_core.agent.sessions import SessionStore, session_dir_for
from lich_core.plugins import (
    HOOK_NAMES,
    HOOK_PAYLOADS,
    LlmCallInfo,
    PluginHost,
    RunEndInfo,
    RunStartInfo,
    ToolCallInfo,
    ToolResultInfo,
    load_plugins,
)
from lich_core.vocabulary import ToolResult, format_tool_result

GUARD_PLUGIN = """
from lich_core.plugins import Plugin

SEEN = []

def before_tool_call(info, ctx):
    SEEN.append(info["tool_name"])
    if info["tool_name"] == "fail":
        return {"block": True, "reason": "failing is not allowed"}
    return None

plugin = Plugin(name="guard", hooks={"before_tool_call": before_tool_call})
"""

BLOCK_ALL_PLUGIN = """
from lich_core.plugins import Plugin

SEEN = []

async def before_tool_call(info, ctx):
    SEEN.append(info["tool_name"])
    return {"block": True}

PLUGIN = Plugin(name="block-all", hooks={"before_tool_call": before_tool_call})
"""

OBSERVER_PLUGIN = """
from lich_core.plugins import Plugin

EVENTS = []

async def on_run_start(info, ctx):
    ctx.state["calls"] = 0
    EVENTS.append(("start", dict(info), dict(ctx.settings)))

def after_tool_call(info, ctx):
    ctx.state["calls"] += 1
    EVENTS.append(("after", dict(info)))

def on_run_end(info, ctx):
    EVENTS.append(("end", dict(info), ctx.state["calls"]))

plugin = Plugin(
    name="observer",
    hooks={"on_run_start": on_run_start, "after_tool_call": after_tool_call, "on_run_end": on_run_end},
)
"""

NOTE_PLUGIN = """
from lich_core.plugins import Plugin

def before_llm_call(info, ctx):
    return {"note": f"turn {info['turn']} saw {len(info['messages'])} messages " + "n" * 3000}

plugin = Plugin(name="annotate", hooks={"before_llm_call": before_llm_call})
"""

CRASHING_PLUGIN = """
from lich_core.plugins import Plugin

def boom(info, ctx):
    raise RuntimeError("hook exploded")

plugin = Plugin(
    name="crashy",
    hooks={name: boom for name in ("before_tool_call", "after_tool_call", "before_llm_call", "on_run_start", "on_run_end")},
)
"""

TOOL_PLUGIN = """
from lich_core.plugins import Plugin
from lich_core.tools.types import FunctionTool, ToolResult

async def shout(args, ctx):
    return ToolResult(ok=True, output=ctx.settings.get("prefix", "") + str(args.get("text", "")).upper())

async def echo(args, ctx):
    return ToolResult(ok=True, output="plugin echo")

plugin = Plugin(
    name="tools",
    tools=[
        FunctionTool("shout", "Uppercase text.", {"type": "object", "properties": {"text": {"type": "string"}}}, shout),
        FunctionTool("echo", "Clashes with a builtin.", {"type": "object"}, echo),
    ],
)
"""

MODELS_PLUGIN = """
from lich_core.plugins import Plugin

async def before_llm_call(info, ctx):
    if info["turn"] != 1:
        return None
    reply = await ctx.models.chat("compress", [{"role": "user", "content": "summarise the ask"}])
    try:
        await ctx.models.chat("chat", [{"role": "user", "content": "not granted"}])
    except PermissionError as err:
        ctx.state["refused"] = str(err)
    return {"note": "summary: " + reply.message.content + " | " + ctx.state.get("refused", "")}

plugin = Plugin(name="lane", hooks={"before_llm_call": before_llm_call})
"""

RECORDING_PLUGIN = """
from lich_core.plugins import HOOK_NAMES, Plugin

SEEN = []

def recorder(hook_name):
    def hook(info, ctx):
        SEEN.append((hook_name, info))
    return hook

plugin = Plugin(name="recorder", hooks={name: recorder(name) for name in HOOK_NAMES})
"""

# Written against `info: dict`: every dict idiom a reader of a dict would use.
DICT_STYLE_PLUGIN = """
import json

from lich_core.plugins import Plugin

SEEN = []

def after_tool_call(info, ctx):
    SEEN.append({
        "index": (info["tool_name"], info["ok"], info["error"]),
        "get": (info.get("result_summary"), info.get("missing", "default")),
        "in": ("args" in info, "missing" in info),
        "keys": list(info), "len": len(info),
        "items": sorted(k for k, _ in info.items()),
        "json": json.loads(json.dumps(dict(info))),
        "equal": info == dict(info),
    })
    try:
        info["missing"]
    except KeyError as err:
        SEEN.append(("KeyError", err.args))

plugin = Plugin(name="dict-style", hooks={"after_tool_call": after_tool_call})
"""


def write_plugin(tmp_path: Path, name: str, source: str) -> str:
    folder = tmp_path / ".lich" / "plugins"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return f".lich/plugins/{name}.py"


def make_agent(
    tmp_path: Path, tools: RecordingTools, model: ScriptedModel, entries: list, **config
) -> tuple[Agent, PluginHost]:
    cfg = make_config(tmp_path, plugins=entries, **config)
    runtime = make_runtime(cfg, tools.tools())
    host = load_plugins(entries, work_dir=tmp_path)
    host.register_tools(runtime, cfg["tools_enabled"])
    compress = ScriptedModel(Turn(text="compressed-reply"), name="compress")
    store = SessionStore.for_config(cfg)
    return Agent(
        model=model,
        runtime=runtime,
        config=cfg,
        plugins=host,
        compress_model=compress,
        session_store=store,
    ), host


def module_of(host: PluginHost, name: str) -> dict:
    loaded = next(p for p in host.plugins if p.name == name)
    hook = next(iter(loaded.plugin.hooks.values()))
    return hook.__globals__


def tool_errors(result) -> dict[str, str | None]:
    out = {}
    for message in result.messages:
        if message.role == "tool":
            content = message.content
            out[message.tool_call_id] = (
                json.loads(content)["error"] if content.startswith("{") else None
            )
    return out


async def test_first_block_wins_and_the_tool_never_runs(tmp_path, tools):
    entries = [
        write_plugin(tmp_path, "guard", GUARD_PLUGIN),
        write_plugin(tmp_path, "blockall", BLOCK_ALL_PLUGIN),
    ]
    model = ScriptedModel(
        tools_turn(call("fail", {}, id="f"), call("echo", {"text": "x"}, id="e")), Turn(text="ok")
    )
    agent, host = make_agent(tmp_path, tools, model, entries)
    result = await agent.run("go")
    assert result.stopped_reason == "final"
    assert tool_errors(result) == {
        "f": "blocked_by_plugin: failing is not allowed",
        "e": "blocked_by_plugin: plugin-less",
    }
    assert tools.calls == []  # the executor was never invoked
    assert module_of(host, "guard")["SEEN"] == ["fail", "echo"]
    assert module_of(host, "block-all")["SEEN"] == ["echo"]  # later hooks do not run after a block


async def test_observer_hooks_get_info_state_and_settings(tmp_path, tools):
    entry = {
        "path": write_plugin(tmp_path, "observer", OBSERVER_PLUGIN),
        "settings": {"mode": "shadow"},
    }
    model = ScriptedModel(
        tools_turn(call("big", {"size": 1000}, id="b"), call("fail", {}, id="f")),
        Turn(text="done"),
        tools_turn(call("echo", {"text": "again"})),
        Turn(text="second"),
    )
    agent, host = make_agent(tmp_path, tools, model, [entry])
    await agent.run("first task")
    await agent.run("two")
    log = module_of(host, "observer")["EVENTS"]
    assert log[0] == ("start", {"input_chars": len("first task")}, {"mode": "shadow"})
    after_big = log[1][1]
    assert (
        after_big["tool_name"] == "big" and after_big["ok"] is True and after_big["error"] is None
    )
    assert after_big["result_summary"] == "x" * 300
    after_fail = log[2][1]
    assert after_fail["ok"] is False and after_fail["error"] == "not_found: nothing here"
    assert log[3] == ("end", {"stopped_reason": "final", "turns_used": 2}, 2)
    # Second run: fresh state, so the count starts again.
    assert log[-1] == ("end", {"stopped_reason": "final", "turns_used": 2}, 1)
    settings = host.plugins[0].settings
    assert isinstance(settings, types.MappingProxyType)
    with pytest.raises(TypeError):
        settings["mode"] = "act"  # type: ignore[index]


async def test_note_goes_to_that_call_only_and_never_to_history(tmp_path, tools):
    model = ScriptedModel(tools_turn(call("echo", {"text": "x"})), Turn(text="done"))
    agent, _ = make_agent(tmp_path, tools, model, [write_plugin(tmp_path, "annotate", NOTE_PLUGIN)])
    result = await agent.run("go")
    for turn, sent in enumerate(model.calls, start=1):
        note = sent[-1]
        assert note.role == "system"
        assert note.content.startswith(f"[plugin annotate] turn {turn} saw ")
        assert len(note.content) == len("[plugin annotate] ") + 2000
    assert not any(m.content.startswith("[plugin") for m in result.messages)
    session_text = next(session_dir_for({"work_dir": str(tmp_path)}).glob("*.jsonl")).read_text()
    assert "[plugin annotate]" not in session_text


async def test_crashing_hooks_warn_and_the_run_goes_on(tmp_path, tools):
    events = EventLog()
    model = ScriptedModel(tools_turn(call("echo", {"text": "x"}, id="e")), Turn(text="survived"))
    agent, _ = make_agent(
        tmp_path, tools, model, [write_plugin(tmp_path, "crashy", CRASHING_PLUGIN)]
    )
    result = await agent.run("go", on_event=events)
    assert result.stopped_reason == "final"
    assert result.final == "survived"
    assert tool_errors(result) == {"e": "blocked_by_plugin: hook_error"}  # a broken guard blocks
    warnings = [e.data.message for e in events.of("plugin_warning")]
    for hook in ("on_run_start", "before_llm_call", "before_tool_call", "after_tool_call"):
        assert any(hook in w and "hook exploded" in w for w in warnings), hook


async def test_models_chat_is_limited_to_granted_roles(tmp_path, tools):
    entry = {"path": write_plugin(tmp_path, "lane", MODELS_PLUGIN), "models": ["compress"]}
    model = ScriptedModel(Turn(text="ok"))
    agent, _ = make_agent(tmp_path, tools, model, [entry])
    await agent.run("go")
    note = model.calls[0][-1].content
    assert note.startswith("[plugin lane] summary: compressed-reply")
    assert "model_role_not_granted" in note and "'chat'" in note
    assert agent.compress_model.calls[0][0].content == "summarise the ask"


async def test_broken_entries_are_isolated(tmp_path, tools):
    good = write_plugin(tmp_path, "guard", GUARD_PLUGIN)
    entries = [
        good,
        "missing/nowhere.py",
        write_plugin(tmp_path, "syntax", "def broken(:\n"),
        write_plugin(tmp_path, "noexport", "x = 1\n"),
        write_plugin(tmp_path, "raises", "raise ImportError('no such dependency')\n"),
        write_plugin(tmp_path, "dup", GUARD_PLUGIN),  # same plugin name "guard"
        {"path": good, "colour": "red"},
        {"path": good, "models": ["summarise"]},
        "notes.txt",
        42,
    ]
    events = EventLog()
    model = ScriptedModel(tools_turn(call("fail", {}, id="f")), Turn(text="ok"))
    agent, host = make_agent(tmp_path, tools, model, entries)
    assert host.names() == ["guard"]
    messages = host.warnings
    assert len(messages) == 9
    expected = [
        "file not found",
        "import failed: SyntaxError",
        "missing export",
        "no such dependency",
        "duplicate plugin name 'guard'",
        "unknown key(s) colour",
        "unknown role(s) summarise",
        "must be a Python module",
        "expected a path or an object",
    ]
    for fragment, message in zip(expected, messages, strict=True):
        assert fragment in message, (fragment, message)
    result = await agent.run("go", on_event=events)
    assert result.stopped_reason == "final"
    assert tool_errors(result) == {"f": "blocked_by_plugin: failing is not allowed"}
    # One summary warning for all nine, as lich's seed reports load errors (issue 33).
    (summary,) = events.of("plugin_warning")
    assert summary.data.message == f"plugin load errors (9): {'; '.join(messages)}"


@pytest.mark.parametrize(
    ("tools_enabled", "offered"),
    [("all", True), (["echo"], False), (["echo", "shout"], True)],
)
async def test_plugin_tools_follow_tools_enabled(tmp_path, tools, tools_enabled, offered):
    entry = {"path": write_plugin(tmp_path, "tools", TOOL_PLUGIN), "settings": {"prefix": "> "}}
    model = ScriptedModel(tools_turn(call("shout", {"text": "hi"}, id="s")), Turn(text="ok"))
    agent, host = make_agent(tmp_path, tools, model, [entry], tools_enabled=tools_enabled)
    assert "shout" in model.tools_seen[0] if model.tools_seen else True
    assert any("duplicate_tool: echo" in w for w in host.warnings)
    result = await agent.run("go")
    assert ("shout" in model.tools_seen[0]) is offered
    shout_result = next(m for m in result.messages if m.role == "tool")
    if offered:
        assert shout_result.content == "> HI"  # the plugin's frozen settings reach its tool
    else:
        assert json.loads(shout_result.content)["error"] == "unknown_tool: shout"
    assert "shout" in agent.runtime.base_registry  # known either way (lich tools lists it)
    # The builtin echo kept its place.
    assert agent.runtime.base_registry.get("echo").description == "Echo text back."


async def test_build_agent_loads_plugins_from_config(tmp_path):
    entry = write_plugin(tmp_path, "tools", TOOL_PLUGIN)
    cfg = make_config(tmp_path, plugins=[entry, "gone.py"])
    model = ScriptedModel(tools_turn(call("shout", {"text": "hey"})), Turn(text="ok"))
    agent = build_agent(cfg, model=model)
    assert agent.plugins is not None and agent.plugins.names() == ["tools"]
    result = await agent.run("go")
    assert [m.content for m in result.messages if m.role == "tool"] == ["HEY"]
    assert agent.compress_model is None and agent.model_for_role("compress") is model


async def test_each_hook_gets_a_fresh_plain_dict_typed_by_its_typeddict(tmp_path, tools):
    """Payloads are plain dicts (issue #43), keyed as their TypedDict says; two plugins' hooks
    get equal dicts, never the same one."""
    assert tuple(HOOK_PAYLOADS) == HOOK_NAMES
    model = ScriptedModel(tools_turn(call("echo", {"text": "hi"}, id="e")), Turn(text="done"))
    second = RECORDING_PLUGIN.replace('name="recorder"', 'name="recorder-2"')
    agent, host = make_agent(
        tmp_path,
        tools,
        model,
        [
            write_plugin(tmp_path, "recorder", RECORDING_PLUGIN),
            write_plugin(tmp_path, "recorder2", second),
        ],
    )
    await agent.run("go")
    seen = module_of(host, "recorder")["SEEN"]
    assert [name for name, _ in seen] == [
        "on_run_start",
        "before_llm_call",
        "before_tool_call",
        "after_tool_call",
        "before_llm_call",
        "on_run_end",
    ]
    for name, info in seen:
        assert type(info) is dict, name
        payload = HOOK_PAYLOADS[name]
        assert list(info) == list(payload.__annotations__), name
        assert set(info) == payload.__required_keys__, name
        assert json.loads(json.dumps(info)) == info, name
    start, llm1, before, after, llm2, end = (info for _, info in seen)
    assert start == RunStartInfo(input_chars=len("go")) == {"input_chars": 2}
    assert before == ToolCallInfo(tool_name="echo", args={"text": "hi"})
    assert after == ToolResultInfo(
        tool_name="echo", args={"text": "hi"}, result_summary="hi", ok=True, error=None
    )
    assert (llm1["turn"], llm2["turn"]) == (1, 2)
    assert llm1["messages"][-1] == {"role": "user", "content": "go"}
    assert list(llm2) == list(LlmCallInfo.__annotations__) == ["turn", "messages"]
    assert end == RunEndInfo(stopped_reason="final", turns_used=2)
    # The second plugin got equal dicts of its own, down to the arguments and the messages.
    other = module_of(host, "recorder-2")["SEEN"]
    assert other == seen
    for (_, mine), (_, theirs) in zip(seen, other, strict=True):
        assert mine is not theirs
    assert before["args"] is not other[2][1]["args"]
    assert llm1["messages"][0] is not other[1][1]["messages"][0]


ATTRIBUTE_PLUGIN = """
from lich_core.plugins import Plugin

def before_tool_call(info, ctx):
    return {"block": info.tool_name == "fail"}

plugin = Plugin(name="attrs", hooks={"before_tool_call": before_tool_call})
"""


async def test_a_hook_reading_payload_attributes_blocks_and_is_told_to_index(tmp_path, tools):
    """A hook written for the short-lived typed payloads (info.tool_name) raises AttributeError
    on a dict: its call is blocked (hook_error, as any throwing guard) and the warning says
    how to read the field."""
    events = EventLog()
    model = ScriptedModel(tools_turn(call("echo", {"text": "x"}, id="e")), Turn(text="done"))
    agent, _ = make_agent(
        tmp_path, tools, model, [write_plugin(tmp_path, "attrs", ATTRIBUTE_PLUGIN)]
    )
    result = await agent.run("go", on_event=events)
    assert tool_errors(result) == {"e": "blocked_by_plugin: hook_error"}
    (warning,) = [e.data.message for e in events.of("plugin_warning")]
    assert warning.startswith("plugin 'attrs': before_tool_call raised AttributeError: ")
    assert warning.endswith(' (hook payloads are plain dicts: read info["tool_name"])')


async def test_a_plugin_written_for_dict_payloads_works_unchanged(tmp_path, tools):
    events = EventLog()
    model = ScriptedModel(tools_turn(call("fail", {}, id="f")), Turn(text="done"))
    agent, host = make_agent(
        tmp_path, tools, model, [write_plugin(tmp_path, "dictstyle", DICT_STYLE_PLUGIN)]
    )
    await agent.run("go", on_event=events)
    assert events.of("plugin_warning") == []
    keys = ["tool_name", "args", "result_summary", "ok", "error"]
    error = "not_found: nothing here"
    summary = format_tool_result(ToolResult(ok=False, output="partial", error=error))
    assert module_of(host, "dict-style")["SEEN"] == [
        {
            "index": ("fail", False, error),
            "get": (summary, "default"),
            "in": (True, False),
            "keys": keys,
            "len": 5,
            "items": sorted(keys),
            "json": {
                "tool_name": "fail",
                "args": {},
                "result_summary": summary,
                "ok": False,
                "error": error,
            },
            "equal": True,
        },
        ("KeyError", ("missing",)),
    ]
