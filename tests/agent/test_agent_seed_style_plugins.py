"""Seed-style plugins (issue #43) loaded from files into a real agent run: the loop with a
scripted model, the real builtin tools (terminal, read_file, write_file) and the built-in
gatekeeper. Hook payloads are plain dicts again: a plugin may `json.dumps` one, copy it, test
`isinstance(info, dict)` and write into it, and whatever it writes stays in its own dict
(the seed: hooks observe and veto; they never rewrite arguments or results).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import EventLog, make_config
from scripted_model import ScriptedModel, Turn, call, tools_turn

from lich_core.agent.factory import build_agent
from lich_core.agent.loop import Agent, RunResult
from lich_core.agent.sessions import session_dir_for
from tests.support.seed_plugins import (
    ANNOTATOR_PLUGIN,
    AUDIT_PLUGIN,
    REWRITTEN,
    RM_GUARD_PLUGIN,
    read_jsonl,
    write_plugin,
)

NO_RM = "blocked_by_plugin: rm is not allowed here"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "victim.txt").write_text("keep me\n", encoding="utf-8")
    (root / "notes.txt").write_text("a note\n", encoding="utf-8")
    return root.resolve()


def agent_with(work: Path, model: ScriptedModel, plugins: list[dict[str, Any]]) -> Agent:
    cfg = make_config(work, plugins=plugins, approval={"terminal": "allow"})
    agent = build_agent(cfg, model=model)
    assert agent.plugins is not None
    assert agent.plugins.warnings == []
    assert agent.plugins.names() == [
        _name(p) for p in plugins
    ]  # every plugin loaded, in config order
    return agent


def _name(entry: dict[str, Any]) -> str:
    return {"audit": "audit", "no_rm": "no-rm", "annotator": "annotator"}[Path(entry["path"]).stem]


def entry(tmp_path: Path, name: str, source: str) -> dict[str, Any]:
    """A config entry for the plugin file `name`.py, which logs to tmp_path/<name>.jsonl."""
    path = write_plugin(tmp_path / "plugins", name, source)
    return {"path": str(path), "settings": {"file": str(tmp_path / f"{name}.jsonl")}}


def outcomes(result: RunResult) -> dict[str, tuple[bool, str]]:
    """call id -> (ok, output or error) for every tool message of the run."""
    out: dict[str, tuple[bool, str]] = {}
    for message in result.messages:
        if message.role != "tool":
            continue
        try:
            data = json.loads(message.content)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("ok") is False:
            out[message.tool_call_id or ""] = (False, str(data.get("error")))
        else:
            out[message.tool_call_id or ""] = (True, message.content)
    return out


async def test_an_audit_logger_json_dumps_each_payload_and_the_tools_run(
    tmp_path: Path, work: Path
) -> None:
    events = EventLog()
    model = ScriptedModel(
        tools_turn(call("read_file", {"path": "notes.txt"}, id="r")),
        tools_turn(call("write_file", {"path": "out.txt", "content": "hello\n"}, id="w")),
        tools_turn(call("terminal", {"command": "echo ran > ran.txt"}, id="t")),
        Turn(text="done"),
    )
    agent = agent_with(work, model, [entry(tmp_path, "audit", AUDIT_PLUGIN)])
    result = await agent.run("go", on_event=events)

    assert events.of("plugin_warning") == []
    assert result.stopped_reason == "final" and result.final == "done"
    assert all(ok for ok, _ in outcomes(result).values()), outcomes(result)
    assert (work / "out.txt").read_text(encoding="utf-8") == "hello\n"
    assert (work / "ran.txt").read_text(encoding="utf-8").strip() == "ran"
    lines = read_jsonl(tmp_path / "audit.jsonl")
    # One line per hook call: before and after each of the three tool calls, as json.dumps(info).
    assert lines[0::2] == [
        {"tool_name": "read_file", "args": {"path": "notes.txt"}},
        {"tool_name": "write_file", "args": {"path": "out.txt", "content": "hello\n"}},
        {"tool_name": "terminal", "args": {"command": "echo ran > ran.txt"}},
    ]
    after = lines[1::2]
    assert [(a["tool_name"], a["ok"], a["error"]) for a in after] == [
        ("read_file", True, None),
        ("write_file", True, None),
        ("terminal", True, None),
    ]
    assert all(list(a) == ["tool_name", "args", "result_summary", "ok", "error"] for a in after), (
        after
    )
    assert "a note" in after[0]["result_summary"]
    assert len(lines) == 6


async def test_an_isinstance_dict_guard_vetoes_rm_and_lets_the_rest_run(
    tmp_path: Path, work: Path
) -> None:
    events = EventLog()
    model = ScriptedModel(
        tools_turn(call("terminal", {"command": "rm victim.txt"}, id="rm")),
        tools_turn(call("terminal", {"command": "cd . && rm -f victim.txt"}, id="rm2")),
        tools_turn(call("terminal", {"command": "cat victim.txt > seen.txt"}, id="cat")),
        tools_turn(call("read_file", {"path": "victim.txt"}, id="read")),
        Turn(text="done"),
    )
    agent = agent_with(work, model, [entry(tmp_path, "no_rm", RM_GUARD_PLUGIN)])
    result = await agent.run("go", on_event=events)

    assert events.of("plugin_warning") == []
    got = outcomes(result)
    assert got["rm"] == (False, NO_RM)
    assert got["rm2"] == (False, NO_RM)
    assert got["cat"][0] and got["read"][0], got
    assert (work / "victim.txt").read_text(encoding="utf-8") == "keep me\n"
    assert (work / "seen.txt").read_text(encoding="utf-8") == "keep me\n"
    # The model read the veto in the tool message answering the call.
    ends = {e.data.call_id: e.data for e in events.of("tool_call_end")}
    assert (ends["rm"].ok, ends["rm"].error) == (False, NO_RM)


async def test_an_annotating_plugin_writes_into_its_own_dicts_only(
    tmp_path: Path, work: Path
) -> None:
    """The annotator (first in config) writes notes into its payloads, copies them, and rewrites
    arguments, results and history in them; the audit logger after it, the tools, the model, the
    events and the session file see none of it."""
    events = EventLog()
    model = ScriptedModel(
        tools_turn(call("write_file", {"path": "out.txt", "content": "hello\n"}, id="w")),
        tools_turn(call("terminal", {"command": "echo ran > ran.txt"}, id="t")),
        tools_turn(call("read_file", {"path": "missing.txt"}, id="m")),
        Turn(text="done"),
    )
    plugins = [
        entry(tmp_path, "annotator", ANNOTATOR_PLUGIN),
        entry(tmp_path, "audit", AUDIT_PLUGIN),
    ]
    agent = agent_with(work, model, plugins)
    result = await agent.run("go", on_event=events)

    assert events.of("plugin_warning") == []  # no hook_error: annotating and copying work
    assert result.stopped_reason == "final" and result.final == "done"
    # The annotator's own view: its note, its copy (taken before it rewrote the rest).
    notes = read_jsonl(tmp_path / "annotator.jsonl")
    assert [n["info"]["note"] for n in notes] == [
        "reviewed write_file",
        "reviewed terminal",
        "reviewed read_file",
    ]
    assert [n["kept"]["copied"] for n in notes] == [True, True, True]
    assert [n["kept"]["ok"] for n in notes] == [True, True, False]
    assert all(n["info"]["result_summary"] == "REWRITTEN" for n in notes)

    # The tools ran with the model's arguments, not the ones the annotator wrote.
    assert (work / "out.txt").read_text(encoding="utf-8") == "hello\n"
    assert (work / "ran.txt").read_text(encoding="utf-8").strip() == "ran"
    assert not (work / "hijacked.txt").exists()
    got = outcomes(result)
    assert got["w"][0] and got["t"][0]
    assert got["m"][0] is False and got["m"][1].startswith("not_found:"), got["m"]

    # The next plugin's hooks got lich's own payloads: no note, the real result.
    audit = read_jsonl(tmp_path / "audit.jsonl")
    assert audit[0] == {
        "tool_name": "write_file",
        "args": {"path": "out.txt", "content": "hello\n"},
    }
    assert [(a["tool_name"], a["ok"]) for a in audit[1::2]] == [
        ("write_file", True),
        ("terminal", True),
        ("read_file", False),
    ]
    assert all("note" not in a for a in audit)

    # Events, the history the model was sent each turn, and the session file are lich's own.
    ends = [(e.data.call_id, e.data.ok) for e in events.of("tool_call_end")]
    assert ends == [("w", True), ("t", True), ("m", False)]
    assert [len(sent) for sent in model.calls][:2] != [0, 0]
    assert model.calls[0][-1].content == "go"
    for sent in model.calls:
        assert any(m.role == "user" and m.content == "go" for m in sent)
    text = json.dumps([[m.to_dict() for m in sent] for sent in model.calls])
    text += json.dumps([m.to_dict() for m in result.messages])
    text += json.dumps([e.to_dict() for e in events.events], default=str)
    sessions = list(session_dir_for(agent.config).glob("*.jsonl"))
    assert sessions
    text += "".join(p.read_text(encoding="utf-8") for p in sessions)
    for marker in REWRITTEN:
        assert marker not in text, marker
