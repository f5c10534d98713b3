"""Conversations over the wire, every client profile: a follow-up's request carries the first
turn, also after a server restart; lich.threads and lich.thread; lich.rewind restores the files
and drops the rewound turns from the next request, or refuses a file the user changed since;
bad thread ids, a busy thread and a damaged thread file; a 150 MB line without a newline, a torn
last line, ids outside the rule and a thread busy with a rewind (issue #43)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import edit, provider_options, start_session, stop_session, uri_of
from pygls.exceptions import JsonRpcInvalidParams

from lich_core.agent.sessions import SESSIONS_DIR_NAME, SessionStore, session_dir_for
from lich_core.agent.thread_log import MAX_THREAD_RECORD_BYTES
from lich_core.userstate import workspace_state_dir
from lich_core.vocabulary import Message

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


def request_text(fake_provider: Any, index: int) -> str:
    return json.dumps(fake_provider.requests[index]["json"]["messages"], ensure_ascii=False)


async def test_a_follow_up_continues_the_thread_also_after_a_restart(
    session, root: Path, client_name: str, fake_provider
) -> None:
    fake_provider.script(
        {"text": "The answer is FORTY-TWO.", "usage": {"input_tokens": 10, "output_tokens": 5}},
        {"text": "Renamed as you asked.", "usage": {"input_tokens": 10, "output_tokens": 5}},
        {
            "text": "Third answer.",
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 4},
        },
    )
    options = provider_options(fake_provider)
    first = await start_session(root, client_name, init_options=options)
    try:
        one = await first.command("lich.ask", {"prompt": "what is the magic number?"})
        assert one["stopped_reason"] == "final", one
        thread = one["thread"]
        assert thread
        assert one["turn"] == 1  # the ask's result says which turn of the thread it was
        # Every lich/event of the task names its thread.
        events = [e for e in first.editor.events if e.get("task_id") == one["task_id"]]
        assert events and all(e["thread"] == thread for e in events)

        two = await first.command("lich.ask", {"prompt": "now rename it", "thread": thread})
        assert two["thread"] == thread and two["task_id"] != one["task_id"]
        assert two["turn"] == 2
        sent = request_text(fake_provider, 1)
        assert "what is the magic number?" in sent and "The answer is FORTY-TWO." in sent
        assert sent.index("FORTY-TWO") < sent.index("now rename it")
    finally:
        await stop_session(first)
    assert not first.failures, first.failures

    # A new server process: the thread is read back from the user state dir.
    client = await session(client_name, init_options=options)
    listed = await client.command("lich.threads", {})
    assert listed["threads"][0] == {
        "thread": thread,
        "title": "what is the magic number?",
        "turns": 2,
        "updated": listed["threads"][0]["updated"],
        "running": False,
    }
    three = await client.command("lich.ask", {"prompt": "and once more", "thread": thread})
    assert three["stopped_reason"] == "final" and three["turn"] == 3
    sent = request_text(fake_provider, 2)
    assert "FORTY-TWO" in sent and "Renamed as you asked." in sent and "and once more" in sent
    shown = await client.command("lich.thread", {"thread": thread})
    assert [t["prompt"] for t in shown["turns"]] == [
        "what is the magic number?",
        "now rename it",
        "and once more",
    ]
    assert [t["final"] for t in shown["turns"]] == [
        "The answer is FORTY-TWO.",
        "Renamed as you asked.",
        "Third answer.",
    ]
    first_turn = shown["turns"][0]
    assert first_turn["turn"] == 1 and first_turn["stopped_reason"] == "final"
    assert first_turn["files"] == [] and first_turn["discarded"] is False
    assert first_turn["face"] == "lsp" and first_turn["task_id"] == one["task_id"]
    # What the provider reported per call, summed; the third was served partly from its cache.
    assert shown["usage"] == {"input": 30, "output": 15, "cached": 4}
    assert shown["turns"][2]["usage"] == {"input": 10, "output": 5, "cached": 4}
    status = await client.command("lich.status", {})
    assert status["threads"][0]["thread"] == thread
    assert status["threads"][0]["usage"] == {"input": 30, "output": 15, "cached": 4}


async def test_rewind_restores_the_files_and_the_history(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "a.py").write_text("value = 1\n", encoding="utf-8")
    fake_provider.script(
        {"text": "Looked: value is 1."},
        {"tool_calls": [edit("a.py", "value = 1", "value = 2")]},
        {"text": "Set it to 2."},
        {"tool_calls": [edit("a.py", "value = 2", "value = 3")]},
        {"text": "Set it to 3."},
        {"text": "After the rewind."},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "a.py")
    one = await client.command("lich.ask", {"prompt": "look at a.py"})
    thread = one["thread"]
    await client.command("lich.ask", {"prompt": "make it TWO", "thread": thread})
    await client.command("lich.ask", {"prompt": "make it THREE", "thread": thread})
    assert client.text(uri) == "value = 3\n"

    rewound = await client.command("lich.rewind", {"thread": thread, "turn": 2})
    assert rewound["ok"] is True, rewound
    assert rewound["rewound"] == [2, 3]
    assert [(f["path"], f["outcome"]) for f in rewound["files"]] == [("a.py", "undone")]
    assert client.text(uri) == "value = 1\n"  # one edit took back both turns
    # Said in words a person reads: the turn by its prompt, no thread id.
    message = 'lich: rewound to before "make it TWO" (2 turns); restored a.py'
    assert rewound["message"] == message and thread not in message
    assert [m.message for m in client.messages if "rewound" in m.message] == [message]

    after = await client.command("lich.ask", {"prompt": "what now?", "thread": thread})
    assert after["turn"] == 4  # rewound turns keep their numbers, as lich.thread shows
    sent = request_text(fake_provider, len(fake_provider.requests) - 1)
    assert "Looked: value is 1." in sent and "what now?" in sent
    assert "make it TWO" not in sent and "Set it to 3." not in sent
    shown = await client.command("lich.thread", {"thread": thread})
    assert [(t["turn"], t["discarded"]) for t in shown["turns"]] == [
        (1, False),
        (2, True),
        (3, True),
        (4, False),
    ]
    assert shown["turns"][1]["files"] == ["a.py"] and shown["turns"][1]["branch"] == 1
    (step,) = shown["turns"][1]["tools"]
    assert (step["name"], step["ok"]) == ("edit_file", True)
    assert '"new_string": "value = 2"' in step["arguments"]
    with pytest.raises(JsonRpcInvalidParams, match="already rewound"):
        await client.command("lich.rewind", {"thread": thread, "turn": 3})


async def test_rewind_refuses_a_file_the_user_changed_on_those_lines(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "b.py").write_text("name = 'old'\nother = 0\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("b.py", "name = 'old'", "name = 'new'")]},
        {"text": "Renamed."},
        {"text": "Told."},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "b.py")
    one = await client.command("lich.ask", {"prompt": "rename"})
    assert client.text(uri) == "name = 'new'\nother = 0\n"
    client.type_text(uri, "name = 'mine'\nother = 0\n")  # the user rewrote the agent's line

    rewound = await client.command("lich.rewind", {"thread": one["thread"], "turn": 1})
    assert rewound["ok"] is False
    (report,) = rewound["files"]
    assert report["outcome"] == "refused" and report["reason"].startswith("undo_conflict:")
    assert rewound["error"].startswith("undo_conflict: b.py:")
    assert client.text(uri) == "name = 'mine'\nother = 0\n"  # the user's text is kept
    # The conversation went back all the same; the next turn hears what stayed.
    await client.command("lich.ask", {"prompt": "again", "thread": one["thread"]})
    sent = request_text(fake_provider, 2)
    assert "Renamed." not in sent
    assert "keep changes from the rewound turns: b.py" in sent


async def test_bad_thread_ids_a_busy_thread_and_a_damaged_file(
    session, root: Path, client_name: str, fake_provider
) -> None:
    fake_provider.script({"text": "one"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    for command, args in (
        ("lich.ask", {"prompt": "x", "thread": "20990101-000000-abcdef"}),
        ("lich.thread", {"thread": "20990101-000000-abcdef"}),
        ("lich.rewind", {"thread": "20990101-000000-abcdef", "turn": 1}),
    ):
        with pytest.raises(JsonRpcInvalidParams, match="unknown_thread:") as caught:
            await client.command(command, args)
        assert args["thread"] in str(caught.value)
    with pytest.raises(JsonRpcInvalidParams, match="invalid_thread_id:"):
        await client.command("lich.rewind", {"thread": "../../etc/passwd", "turn": 1})
    assert fake_provider.requests == []

    one = await client.command("lich.ask", {"prompt": "first"})
    thread = one["thread"]
    # A damaged thread file beside it: skipped (told once in the log), the good one still listed.
    sessions = workspace_state_dir(root) / SESSIONS_DIR_NAME
    (sessions / "20200101-000000-000000.jsonl").write_bytes(b"\xff\x00[[[{not json\n")
    listed = await client.command("lich.threads", {})
    assert [t["thread"] for t in listed["threads"]] == [thread]
    with pytest.raises(JsonRpcInvalidParams, match="field 'turn'"):
        await client.command("lich.rewind", {"thread": thread, "turn": 0})
    with pytest.raises(JsonRpcInvalidParams, match="no turn 5"):
        await client.command("lich.rewind", {"thread": thread, "turn": 5})

    # Two turns of one thread never interleave: the second is refused while the first runs.
    (root / "c.py").write_text("c = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("c.py", "c = 1", "c = 2")]},
        {"text": "edited"},
    )
    client.open(root / "c.py")
    with client.holding_edits():
        running = asyncio.ensure_future(
            client.command("lich.ask", {"prompt": "edit c", "thread": thread})
        )
        await client.wait_until(lambda: bool(client.editor.applied), what="the held edit")
        with pytest.raises(JsonRpcInvalidParams, match="thread_busy:"):
            await client.command("lich.ask", {"prompt": "meanwhile", "thread": thread})
        listed = await client.command("lich.threads", {})
        assert next(t for t in listed["threads"] if t["thread"] == thread)["running"] is True
    result = await running
    assert result["stopped_reason"] == "final"
    assert uri_of(root / "c.py") in result["edited"]


async def test_anthropic_follow_up_marks_the_cached_prefix_and_reports_cached_tokens(
    session, root: Path, client_name: str, fake_provider
) -> None:
    """The fake Anthropic server refuses a request with more than four cache_control marks (400,
    as the API does); the follow-up marks the system prompt and the history's newest turns, and
    the cache figures it reports reach lich.thread."""
    from tests.support.fake_provider import count_cache_control

    fake_provider.script(
        {"text": "First answer.", "usage": {"input_tokens": 900, "output_tokens": 20}},
        {
            "text": "Second answer.",
            "usage": {"input_tokens": 1000, "output_tokens": 30, "cache_read_tokens": 880},
        },
    )
    options = {
        "providers": [
            {"name": "claude", "kind": "anthropic", "base_url": fake_provider.url, "model": "m"}
        ]
    }
    client = await session(client_name, init_options=options)
    one = await client.command("lich.ask", {"prompt": "explain the module"})
    assert one["stopped_reason"] == "final", one
    two = await client.command("lich.ask", {"prompt": "and its tests?", "thread": one["thread"]})
    assert two["stopped_reason"] == "final", two
    body = fake_provider.requests[1]["json"]
    assert 1 <= count_cache_control(body) <= 4
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    # The previous turn's exchange is in the marked (cached) prefix of the follow-up.
    marked = [
        index
        for index, item in enumerate(body["messages"])
        if not isinstance(item["content"], str)
        and any(block.get("cache_control") for block in item["content"])
    ]
    assert marked and "explain the module" in json.dumps(body["messages"][: marked[0] + 1])
    shown = await client.command("lich.thread", {"thread": one["thread"]})
    assert [t["usage"]["cached"] for t in shown["turns"]] == [0, 880]
    assert shown["usage"] == {"input": 1900, "output": 50, "cached": 880}


async def test_a_follow_up_hears_the_users_edits_and_undos_since_the_last_turn(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "n.py").write_text("alpha = 1\nbeta = 2\n", encoding="utf-8")
    (root / "u.py").write_text("u = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("n.py", "alpha = 1", "alpha = 10")]},
        {"text": "Set alpha."},
        {"tool_calls": [edit("u.py", "u = 1", "u = 2")]},
        {"text": "Set u."},
        {"text": "Understood."},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "n.py")
    client.open(root / "u.py")
    one = await client.command("lich.ask", {"prompt": "set alpha"})
    thread = one["thread"]
    two = await client.command("lich.ask", {"prompt": "set u", "thread": thread})
    # Between the turns' requests and the next one: the user rewrites the agent's line in n.py
    # and undoes the second turn's task.
    client.type_text(uri, "alpha = 99  # mine\nbeta = 2\n")
    undone = await client.command("lich.undoTask", {"task_id": two["task_id"]})
    assert undone["ok"] is True, undone
    await client.command("lich.ask", {"prompt": "carry on", "thread": thread})
    request = fake_provider.requests[-1]["json"]["messages"]
    said = json.dumps(request[-2:], ensure_ascii=False)  # the follow-up's prompt and notes
    assert "carry on" in json.dumps(request, ensure_ascii=False)
    assert "The user edited lines you had changed in n.py" in said
    assert "alpha = 99  # mine" in said
    assert "took back your changes to u.py" in said


async def test_rewind_says_what_the_journal_cannot_restore(
    session, root: Path, client_name: str, fake_provider
) -> None:
    """A turn that ran in the CLI wrote to disk, not through the editor's undo journal: the
    rewind takes the conversation back and names the files it could not restore."""
    store = SessionStore(session_dir_for({"work_dir": str(root)}))
    writer = store.create(work_dir=str(root), title="from the shell")
    thread = writer.session_id
    writer.append({"type": "run", "event": "start", "run_id": "c1", "ts": 1.0, "prompt": "p1"})
    writer.message(Message(role="user", content="p1"))
    writer.message(Message(role="assistant", content="wrote x.py"))
    writer.append(
        {"type": "run", "event": "end", "run_id": "c1", "ts": 2.0, "stopped_reason": "final"}
    )
    writer.close()
    writer = store.open_append(thread)
    writer.append(
        {"type": "run", "event": "start", "run_id": "c2", "ts": 3.0, "prompt": "p2", "face": "cli"}
    )
    writer.message(Message(role="user", content="p2"))
    writer.message(Message(role="assistant", content="wrote y.py"))
    writer.append(
        {
            "type": "run",
            "event": "end",
            "run_id": "c2",
            "ts": 4.0,
            "stopped_reason": "final",
            "files": ["y.py"],
        }
    )
    writer.close()
    fake_provider.script({"text": "from before p2"})
    client = await session(client_name, init_options=provider_options(fake_provider))

    rewound = await client.command("lich.rewind", {"thread": thread, "turn": 2})
    assert rewound["ok"] is False and rewound["files"] == []
    (missing,) = rewound["not_restored"]
    assert missing["turn"] == 2 and missing["files"] == ["y.py"]
    assert missing["reason"].startswith("not_restorable: turn 2 ran in cli")
    assert "not restored: y.py" in rewound["message"]
    await client.command("lich.ask", {"prompt": "p3", "thread": thread})
    sent = request_text(fake_provider, 0)
    assert "wrote x.py" in sent and "wrote y.py" not in sent
    assert "keep changes from the rewound turns: y.py" in sent


async def test_a_client_chosen_id_names_the_new_thread_from_its_first_event(
    session, root: Path, client_name: str, fake_provider
) -> None:
    fake_provider.script({"text": "hello"}, {"text": "again"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    chosen = "chat-7f3a"
    result = await client.command("lich.ask", {"prompt": "hi", "new_thread": chosen})
    assert result["thread"] == chosen
    first = next(e for e in client.editor.events if e.get("task_id") == result["task_id"])
    assert first["thread"] == chosen and first["type"] == "run_start"
    await client.command("lich.ask", {"prompt": "more", "thread": chosen})
    assert "hello" in request_text(fake_provider, 1)
    with pytest.raises(JsonRpcInvalidParams, match="thread_exists:"):
        await client.command("lich.ask", {"prompt": "x", "new_thread": chosen})
    with pytest.raises(JsonRpcInvalidParams, match="invalid_thread_id: '../up'"):
        await client.command("lich.ask", {"prompt": "x", "new_thread": "../up"})
    with pytest.raises(JsonRpcInvalidParams, match="not both"):
        await client.command("lich.ask", {"prompt": "x", "thread": chosen, "new_thread": "n2"})


# --- issue #43: bounded records, torn lines, the id rule, a rewind keeps its thread busy ---

BIG_RECORD_BYTES = 150 * 1024 * 1024
BAD_IDS = ("abc\n", "latest", "a/b", "x" * 65, "")


def thread_with_one_turn(root: Path, prompt: str, answer: str) -> tuple[SessionStore, str]:
    """A thread written as another face would (the CLI): its first turn done."""
    store = SessionStore(session_dir_for({"work_dir": str(root)}))
    writer = store.create(work_dir=str(root), title=prompt)
    writer.append({"type": "run", "event": "start", "run_id": "c1", "ts": 1.0, "prompt": prompt})
    writer.message(Message(role="user", content=prompt))
    writer.message(Message(role="assistant", content=answer))
    writer.append(
        {"type": "run", "event": "end", "run_id": "c1", "ts": 2.0, "stopped_reason": "final"}
    )
    writer.close()
    return store, writer.session_id


def plant_without_newline(path: Path, total: int) -> None:
    """`total` bytes and no newline appended to `path`, 1 MiB at a time (the test stays small)."""
    chunk = b"x" * (1 << 20)
    with open(path, "ab") as handle:
        for _ in range(total // len(chunk)):
            handle.write(chunk)


async def test_a_150_mb_line_without_a_newline_is_skipped_and_the_turn_works(
    session, root: Path, fake_provider, capfd: pytest.CaptureFixture[str]
) -> None:
    store, thread = thread_with_one_turn(root, "first question", "FIRST-ANSWER")
    path = store.path_for(thread)
    plant_without_newline(path, BIG_RECORD_BYTES)
    fake_provider.script({"text": "second answer"})
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))

    started = time.monotonic()
    two = await client.command(
        "lich.ask", {"prompt": "second question", "thread": thread}, timeout_s=10
    )
    answered = time.monotonic() - started
    assert two["stopped_reason"] == "final", two
    sent = request_text(fake_provider, 0)
    assert "FIRST-ANSWER" in sent and "second question" in sent and "xxxx" not in sent
    shown = await client.command("lich.thread", {"thread": thread}, timeout_s=5)
    assert [t["prompt"] for t in shown["turns"]] == ["first question", "second question"]
    listed = await client.command("lich.threads", {}, timeout_s=5)
    assert [(t["thread"], t["turns"]) for t in listed["threads"]] == [(thread, 2)]
    # One warning for the line, however often the file was read (the ask, the agent's load,
    # lich.thread, the listing).
    over = f"is over {MAX_THREAD_RECORD_BYTES // (1 << 20)} MiB"
    stderr = ""

    def warned() -> bool:
        nonlocal stderr
        stderr += capfd.readouterr().err
        return over in stderr

    await client.wait_until(warned, what="the warning about the oversized record")
    assert stderr.count(over) == 1, stderr
    assert str(path) in stderr
    print(f"lich.ask on a thread with a 150 MB line answered in {answered:.2f} s")


async def test_a_turn_after_a_torn_last_line_is_seen_and_can_be_rewound(
    session, root: Path, fake_provider
) -> None:
    (root / "a.py").write_text("value = 1\n", encoding="utf-8")
    fake_provider.script(
        {"text": "Looked."},
        {"tool_calls": [edit("a.py", "value = 1", "value = 2")]},
        {"text": "Set it to 2."},
        {"text": "After the rewind."},
    )
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    uri = client.open(root / "a.py")
    one = await client.command("lich.ask", {"prompt": "look at a.py"})
    thread = one["thread"]
    path = workspace_state_dir(root) / SESSIONS_DIR_NAME / f"{thread}.jsonl"
    with open(path, "ab") as handle:  # a crash mid-append
        handle.write(b'{"type": "message", "ts": 9.0, "message": {"role": "assistant", "cont')

    await client.command("lich.ask", {"prompt": "make it TWO", "thread": thread})
    assert client.text(uri) == "value = 2\n"
    shown = await client.command("lich.thread", {"thread": thread})
    assert [(t["turn"], t["prompt"]) for t in shown["turns"]] == [
        (1, "look at a.py"),
        (2, "make it TWO"),
    ]
    assert shown["turns"][1]["files"] == ["a.py"]

    rewound = await client.command("lich.rewind", {"thread": thread, "turn": 2})
    assert rewound["ok"] is True and rewound["rewound"] == [2], rewound
    assert client.text(uri) == "value = 1\n"
    await client.command("lich.ask", {"prompt": "what now?", "thread": thread})
    sent = request_text(fake_provider, len(fake_provider.requests) - 1)
    assert "Looked." in sent and "make it TWO" not in sent


async def test_ids_outside_the_rule_are_refused_by_every_command(
    session, root: Path, fake_provider
) -> None:
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    for bad in BAD_IDS:
        for command, args in (
            ("lich.ask", {"prompt": "x", "thread": bad}),
            ("lich.ask", {"prompt": "x", "new_thread": bad}),
            ("lich.thread", {"thread": bad}),
            ("lich.rewind", {"thread": bad, "turn": 1}),
        ):
            with pytest.raises(JsonRpcInvalidParams, match="invalid_thread_id:") as caught:
                await client.command(command, args)
            assert repr(bad) in str(caught.value), caught.value
    assert fake_provider.requests == []
    assert (await client.command("lich.threads", {}))["threads"] == []


async def test_a_follow_up_and_a_second_rewind_are_busy_while_a_rewind_waits(
    session, root: Path, fake_provider
) -> None:
    (root / "r.py").write_text("r = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "r = 1", "r = 2")]},
        {"text": "Set r."},
        {"text": "After the rewind."},
    )
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    uri = client.open(root / "r.py")
    one = await client.command("lich.ask", {"prompt": "set r"})
    thread = one["thread"]
    applied = len(client.editor.applied)
    with client.holding_edits():
        rewinding = asyncio.ensure_future(
            client.command("lich.rewind", {"thread": thread, "turn": 1})
        )
        await client.wait_until(
            lambda: len(client.editor.applied) > applied, what="the rewind's held edit"
        )
        with pytest.raises(JsonRpcInvalidParams, match="thread_busy:.*rewound"):
            await client.command("lich.ask", {"prompt": "meanwhile", "thread": thread})
        with pytest.raises(JsonRpcInvalidParams, match="thread_busy:"):
            await client.command("lich.rewind", {"thread": thread, "turn": 1})
        # Reading it is not refused.
        assert len((await client.command("lich.thread", {"thread": thread}))["turns"]) == 1
    rewound = await rewinding
    assert rewound["ok"] is True and client.text(uri) == "r = 1\n"
    assert len(fake_provider.requests) == 2  # nothing was sent for the refused follow-up
    # Once the rewind answered, the thread takes a turn again.
    after = await client.command("lich.ask", {"prompt": "and now", "thread": thread})
    assert after["stopped_reason"] == "final"
    shown = await client.command("lich.thread", {"thread": thread})
    assert [(t["prompt"], t["discarded"]) for t in shown["turns"]] == [
        ("set r", True),
        ("and now", False),
    ]


async def test_tool_events_and_lich_thread_say_each_calls_kind_and_target(
    session, root: Path, fake_provider
) -> None:
    """The server says what each tool call is about (kind, target, title), computed once in the
    core: in tool_call_start and tool_call_end, and again in lich.thread's turns."""
    (root / "a.py").write_text("one\ntwo\nthree\n", encoding="utf-8")
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.py", "start": 2, "end": 3}}
            ]
        },
        {"tool_calls": [edit("a.py", "two", "TWO")]},
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "ls -la"}}]},
        {"tool_calls": [{"name": "fetch_url", "arguments": {"url": "http://127.0.0.1:9/x"}}]},
        {"text": "done"},
    )
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    client.open(root / "a.py")
    client.editor.message_answers.extend(["Deny", "Deny"])  # terminal's and fetch_url's
    result = await client.command("lich.ask", {"prompt": "look around"})
    assert result["stopped_reason"] == "final", result
    expected = [
        ("read_file", "read", {"path": "a.py", "lines": {"start": 2, "end": 3}}, "read_file a.py"),
        ("edit_file", "edit", {"path": "a.py"}, "edit_file a.py"),
        ("terminal", "execute", {"command": "ls -la"}, "terminal ls -la"),
        ("fetch_url", "fetch", {"url": "http://127.0.0.1:9/x"}, "fetch_url http://127.0.0.1:9/x"),
    ]
    ours = [e for e in client.editor.events if e.get("task_id") == result["task_id"]]
    for kind in ("tool_call_start", "tool_call_end"):
        seen = [
            (e["data"]["name"], e["data"]["kind"], e["data"]["target"], e["data"]["title"])
            for e in ours
            if e["type"] == kind
        ]
        assert seen == expected, (kind, seen)
    shown = await client.command("lich.thread", {"thread": result["thread"]})
    steps = shown["turns"][0]["tools"]
    assert [(s["name"], s["kind"], s["target"], s["title"]) for s in steps] == expected
    # The terminal's approval question, as data in the task's `approval` event, sent before the
    # window/showMessageRequest whose message and actions it matches.
    approvals = [e for e in ours if e["type"] == "approval"]
    # terminal, then fetch_url (net/fetch asks too): one event per question, in order.
    assert [e["data"]["tool"] for e in approvals] == ["terminal", "fetch_url"]
    assert [e["data"]["question"] for e in approvals] == [
        r.message for r in client.editor.message_requests
    ]
    asked, request = approvals[0], client.editor.message_requests[0]
    assert approvals[1]["data"]["host"] == "127.0.0.1"
    assert approvals[1]["data"]["target"] == {"url": "http://127.0.0.1:9/x"}
    terminal_start = next(
        e for e in ours if e["type"] == "tool_call_start" and e["data"]["name"] == "terminal"
    )
    assert asked["seq"] > terminal_start["seq"]
    assert asked["data"] == {
        "turn": 3,
        "call_id": terminal_start["data"]["call_id"],
        "id": asked["data"]["id"],
        "tool": "terminal",
        "capability": "process/exec",
        "kind": "execute",
        "target": {"command": "ls -la"},
        "command": "ls -la",
        "cwd": str(root.resolve()),
        "host": None,
        "what_will_run": "runs `ls -la` with bash -lc in the workspace",
        "question": request.message,
        "options": [action.title for action in request.actions],
    }
    assert asked["data"]["id"].startswith("approval-")
