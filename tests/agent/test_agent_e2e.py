"""End to end: build_agent with real providers and builtin tools against the fake HTTP server."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from agent_helpers import WAIT_S, EventLog, assert_history_valid, make_config, wait_until

from lich_core.agent.factory import build_agent
from lich_core.agent.prompts import COMPRESS_SYSTEM_PROMPT
from lich_core.tools.types import CancelToken


def provider(server, name: str = "fake") -> dict:
    return {
        "name": name,
        "kind": "openai_compat",
        "base_url": server.url + "/v1",
        "model": "fake-model",
    }


def config_for(tmp_path: Path, server, **overrides):
    overrides.setdefault("providers", [provider(server)])
    return make_config(tmp_path, **overrides)


def sent_messages(server, index: int) -> list[dict]:
    return server.requests[index]["json"]["messages"]


def tool_contents(result) -> list[str]:
    return [m.content for m in result.messages if m.role == "tool"]


async def test_read_patch_verify_with_hashline(tmp_path, fake_provider):
    from lich_core.hashline.anchors import line_hash

    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    anchor = f"2:{line_hash('    return a - b')}"
    patch = f"@@ calc.py\n= {anchor}..{anchor}\n~    return a + b\n"
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}], "chunks": 3},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"text": "Fixed the subtraction.", "chunks": 4},
    )
    result = await build_agent(config_for(tmp_path, fake_provider)).run("fix add")
    assert result.stopped_reason == "final", result.messages
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    read, patched, verified = tool_contents(result)
    assert anchor in read
    assert "Edited calc.py" in patched
    assert "return a + b" in verified
    # The model saw each result in the next request.
    assert any(
        m.get("role") == "tool" and "Edited calc.py" in str(m.get("content"))
        for m in sent_messages(fake_provider, 2)
    )


async def test_read_edit_verify_with_file_tools(tmp_path, fake_provider):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "cat calc.py"}}]},
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                }
            ],
            "chunks": 4,
        },
        {
            "tool_calls": [
                {
                    "name": "terminal",
                    "arguments": {"command": "python3 -c 'import calc; print(calc.add(2, 3))'"},
                }
            ]
        },
        {"text": "Fixed: add(2, 3) is 5.", "chunks": 3},
    )
    events = EventLog()
    result = await build_agent(config_for(tmp_path, fake_provider)).run("fix add", on_event=events)
    assert result.stopped_reason == "final"
    assert result.final == "Fixed: add(2, 3) is 5."
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    shown, edited, verified = tool_contents(result)
    assert "return a - b" in shown
    assert "5" in verified
    assert [e.data.ok for e in events.of("tool_call_end")] == [True, True, True]
    assert "".join(e.data.text for e in events.of("text_delta")) == result.final
    assert len(fake_provider.requests) == 4
    assert result.usage.input_tokens > 0


async def test_budget_exhaustion_through_the_server(tmp_path, fake_provider):
    turn = {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo hi"}}]}
    fake_provider.script(turn, turn, turn)
    result = await build_agent(config_for(tmp_path, fake_provider, max_turns=2)).run("loop")
    assert result.stopped_reason == "budget"
    assert len(fake_provider.requests) == 2
    assert json.loads(tool_contents(result)[-1])["error"] == "turn_budget_exhausted"
    assert_history_valid(result.messages)


async def test_malformed_tool_arguments_reach_the_model_as_an_error(tmp_path, fake_provider):
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": '{"command": "echo'}]},
        {"text": "I will fix my JSON."},
    )
    result = await build_agent(config_for(tmp_path, fake_provider)).run("x")
    assert result.stopped_reason == "final"
    error = json.loads(tool_contents(result)[0])["error"]
    assert error.startswith("invalid_arguments:")
    tool_message = [m for m in sent_messages(fake_provider, 1) if m.get("role") == "tool"][0]
    assert "invalid_arguments" in str(tool_message["content"])


# Bounds on how soon a cancel stops the run: far below what the cancelled work would take (a
# 12 s stream, a 30 s sleep), loose enough for a loaded two-core machine.
STOPPED_WITHIN_S = 6.0


async def test_cancel_mid_stream(tmp_path, fake_provider):
    fake_provider.script({"text": "slow " * 60, "chunks": 60, "chunk_delay_s": 0.2})
    cancel = CancelToken()
    cancelled_at: list[float] = []

    def listener(event):
        if event.type == "text_delta" and not cancel.cancelled:
            cancelled_at.append(time.perf_counter())
            cancel.cancel()

    result = await build_agent(config_for(tmp_path, fake_provider)).run(
        "x", on_event=listener, cancel=cancel
    )
    assert result.stopped_reason == "aborted"
    assert (
        time.perf_counter() - cancelled_at[0] < STOPPED_WITHIN_S
    )  # the rest of the stream takes 12 s
    assert [m.role for m in result.messages] == ["system", "user"]
    # The HTTP stream was really closed: the server saw its client hang up mid-answer.
    assert await asyncio.to_thread(fake_provider.wait_for_disconnects, 1)


def _sleeping(pid_file: Path) -> bool:
    """The shell wrote its pid and exec'd `sleep`: the process to be killed is really running."""
    try:
        pid = int(pid_file.read_text())
        with open(f"/proc/{pid}/comm", encoding="utf-8") as comm:
            return comm.read().strip() == "sleep"
    except (OSError, ValueError):
        return False


async def test_cancel_mid_tool_stops_sleep_quickly(tmp_path, fake_provider):
    fake_provider.script(
        {
            "tool_calls": [
                {
                    "name": "terminal",
                    "arguments": {"command": "echo $$ > sleep.pid; exec sleep 30"},
                    "id": "s",
                }
            ]
        },
        {"text": "never asked"},
    )
    cancel = CancelToken()
    events = EventLog()
    agent = build_agent(config_for(tmp_path, fake_provider))
    task = asyncio.ensure_future(agent.run("x", on_event=events, cancel=cancel))
    await wait_until(
        lambda: _sleeping(tmp_path / "sleep.pid") or task.done(), "the terminal tool to run sleep"
    )
    assert not task.done(), task.result()
    cancelled_at = time.perf_counter()
    cancel.cancel()
    result = await asyncio.wait_for(task, WAIT_S)
    assert time.perf_counter() - cancelled_at < STOPPED_WITHIN_S  # sleep alone would take 30 s
    assert result.stopped_reason == "aborted"
    assert json.loads(tool_contents(result)[0])["error"] == "cancelled"
    assert len(fake_provider.requests) == 1
    assert_history_valid(result.messages)


async def test_failover_across_a_chain(tmp_path, fake_provider):
    fake_provider.script({"status": 401, "body": "bad key"}, {"text": "from the backup"})
    cfg = config_for(
        tmp_path,
        fake_provider,
        providers=[provider(fake_provider, "primary"), provider(fake_provider, "backup")],
    )
    events = EventLog()
    result = await build_agent(cfg).run("x", on_event=events)
    assert result.stopped_reason == "final"
    assert result.final == "from the backup"
    assert len(fake_provider.requests) == 2
    assert events.of("llm_end")[0].data.provider == "backup"


async def test_a_stream_that_breaks_and_is_retried_emits_llm_retry(tmp_path, fake_provider):
    fake_provider.script(
        {"text": "first try " * 4, "chunks": 8, "drop_after_chunks": 4},
        {"text": "second try, complete.", "chunks": 3},
    )
    events = EventLog()
    result = await build_agent(config_for(tmp_path, fake_provider)).run("x", on_event=events)
    assert result.stopped_reason == "final" and result.final == "second try, complete."
    kinds = [e.type for e in events.events if e.type in ("text_delta", "llm_retry", "llm_end")]
    retry_at = kinds.index("llm_retry")
    assert "text_delta" in kinds[:retry_at] and kinds[-1] == "llm_end"
    (retry,) = events.of("llm_retry")
    before = "".join(e.data.text for e in events.of("text_delta") if e.seq < retry.seq)
    after = "".join(e.data.text for e in events.of("text_delta") if e.seq > retry.seq)
    # A renderer that drops `discarded_chars` of streamed text shows exactly the final answer.
    assert retry.data.discarded_chars == len(before) > 0
    assert after == result.final
    assert retry.data.action == "retry" and retry.data.kind == "network"
    assert retry.data.turn == 1 and retry.data.provider == "fake"


async def test_provider_error_ends_the_run_with_one_line(tmp_path, fake_provider):
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo kept"}}]},
        {"status": 401, "body": "bad key"},
    )
    events = EventLog()
    result = await build_agent(config_for(tmp_path, fake_provider)).run("x", on_event=events)
    assert result.stopped_reason == "error"
    assert "auth" in result.error and "\n" not in result.error
    assert tool_contents(result)[0].startswith("kept")
    # The user reads plain words (no provider name from the config, no kind); the details stay.
    (error,) = events.of("error")
    assert error.data.summary == (
        f"The model server at {fake_provider.url}/v1 refused the API key (HTTP 401)."
    )
    assert error.data.message == result.error


async def test_compression_kicks_in_on_a_long_run(tmp_path, fake_provider):
    # Every turn both talks and calls a tool, so whichever request is the compression one gets
    # a usable summary; the budget is small enough that the history outgrows it in a few turns.
    step = {
        "text": "step done",
        "tool_calls": [
            {"name": "terminal", "arguments": {"command": "printf 'x%.0s' $(seq 1 600)"}}
        ],
    }
    fake_provider.script(*[step] * 12, {"text": "finished"})
    cfg = config_for(
        tmp_path,
        fake_provider,
        context_budget_tokens=1000,
        compress_threshold=0.5,
        system_prompt="sys",
        max_turns=30,
    )
    events = EventLog()
    result = await build_agent(cfg).run("do a long job " + "please " * 50, on_event=events)
    assert result.stopped_reason == "final"
    compress_requests = [
        r
        for r in fake_provider.requests
        if r["json"]["messages"][0]["content"] == COMPRESS_SYSTEM_PROMPT
    ]
    assert compress_requests
    assert any(e.data.ok for e in events.of("compress_end"))
    assert any(m.content.startswith("[Summary of earlier turns") for m in result.messages)
    assert_history_valid(result.messages)


PLUGINS = {
    "veto": """
from lich_core.plugins import Plugin

def before_tool_call(info, ctx):
    if "rm " in info["args"].get("command", ""):
        return {"block": True, "reason": "no deleting"}

plugin = Plugin(name="veto", hooks={"before_tool_call": before_tool_call})
""",
    "note": """
from lich_core.plugins import Plugin

async def before_llm_call(info, ctx):
    return {"note": "remember the house style"}

plugin = Plugin(name="note", hooks={"before_llm_call": before_llm_call})
""",
    "crash": """
from lich_core.plugins import Plugin

def explode(info, ctx):
    raise ValueError("kaboom")

plugin = Plugin(name="crash", hooks={"after_tool_call": explode, "on_run_end": explode})
""",
    "broken": "import does_not_exist_anywhere\n",
}


async def test_plugins_block_annotate_and_survive_crashes(tmp_path, fake_provider):
    entries = []
    for name, source in PLUGINS.items():
        (tmp_path / f"{name}.py").write_text(source)
        entries.append(f"{name}.py")
    (tmp_path / "keep.txt").write_text("precious")
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "rm keep.txt"}}]},
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo fine"}}]},
        {"text": "done"},
    )
    events = EventLog()
    result = await build_agent(config_for(tmp_path, fake_provider, plugins=entries)).run(
        "x", on_event=events
    )
    assert result.stopped_reason == "final"
    assert (tmp_path / "keep.txt").exists()
    blocked, fine = tool_contents(result)
    assert json.loads(blocked)["error"] == "blocked_by_plugin: no deleting"
    assert fine.startswith("fine")
    for index in range(3):
        last = sent_messages(fake_provider, index)[-1]
        assert (
            last["role"] == "system" and last["content"] == "[plugin note] remember the house style"
        )
    assert not any("[plugin note]" in m.content for m in result.messages)
    warnings = [e.data.message for e in events.of("plugin_warning")]
    assert any("broken.py" in w and "does_not_exist_anywhere" in w for w in warnings)
    assert any("kaboom" in w for w in warnings)


async def test_session_resume_through_the_server(tmp_path, fake_provider):
    fake_provider.script({"text": "the answer is 42"}, {"text": "still 42"})
    cfg = config_for(tmp_path, fake_provider)
    first = await build_agent(cfg).run("what is the answer?")
    second = await build_agent(cfg).run("are you sure?", resume="latest")
    assert second.session_id == first.session_id
    contents = [m.get("content") for m in sent_messages(fake_provider, 1)]
    assert contents[-3:] == ["what is the answer?", "the answer is 42", "are you sure?"]


async def test_a_resumed_session_must_read_again_before_patching(tmp_path, fake_provider):
    from lich_core.hashline.anchors import line_hash

    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    anchor = f"1:{line_hash('alpha')}"
    patch = f"@@ notes.txt\n= {anchor}..{anchor}\n~ALPHA\n"
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "read it"},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        {"text": "the patch was refused"},
    )
    cfg = config_for(tmp_path, fake_provider)
    await build_agent(cfg).run("read notes")
    resumed = await build_agent(cfg).run("now patch it", resume="latest")
    assert resumed.stopped_reason == "final"
    error = json.loads(tool_contents(resumed)[-1])["error"]
    assert "not_read" in error  # the new run's read state is empty
    assert (tmp_path / "notes.txt").read_text() == "alpha\nbeta\n"
