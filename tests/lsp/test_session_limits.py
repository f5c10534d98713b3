"""Limits on what the session takes in and sends out, in-process.

Each test runs an EditorSession in this process against the FakeEditor (the `editor` fixture)
and a fake model on 127.0.0.1. A runaway model answer stops at the response cap with a clear
error; streamed text reaches the editor coalesced (at most 20 `lich/event` notifications a
second per task), in order, and every lich/event, log line and message stays under 64 KiB (the
session and its TaskManager clip them before the EditorPort; the protocol layer clips again on
the wire); absurd ranges are refused as bad arguments; finished tasks are pruned; lich.applyPatch
takes every header the patch grammar takes. Framing, malformed input and the transports stay on
the wire in test_lsp_limits.py.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import WAIT_S, bounded, provider_options, uri_of
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lich_core.hashline.anchors import line_hash
from lich_lsp.messages import MAX_EDITOR_MESSAGE_BYTES
from lich_lsp.tasks import EVENT_COALESCE_INTERVAL_S, MAX_FINISHED_TASKS
from tests.support.fake_provider import FakeProviderServer

CUT_MARKER = re.compile(r"… \[cut (\d+) chars\]$")


def _wire_size(value: Any) -> int:
    """Bytes of `value` as pygls puts it on the wire (json.dumps, ASCII-escaped)."""
    return len(json.dumps(value))


def _error_popups(fake: Any) -> list[str]:
    return [text for kind, text in fake.messages if kind == types.MessageType.Error]


def _text_events(fake: Any) -> list[dict[str, Any]]:
    return [e for e in fake.events if e.get("type") == "text_delta"]


def _log_payloads(fake: Any) -> list[str]:
    return [text for _, text in fake.logs]


def _streamed_chars(fake: Any) -> int:
    """Characters of streamed text the session handled: shown, plus what the cut markers say was cut."""
    total = 0
    for event in _text_events(fake):
        text = event["data"]["text"]
        marker = CUT_MARKER.search(text)
        total += len(text) - len(marker.group(0)) + int(marker.group(1)) if marker else len(text)
    return total


async def _wait_for_disconnects(provider: FakeProviderServer, count: int) -> None:
    """Until the fake model saw `count` clients hang up (its own bounded wait, off the event loop)."""
    await asyncio.to_thread(provider.wait_for_disconnects, count, WAIT_S)


# --- a runaway answer -----------------------------------------------------------------------------


async def test_an_endless_stream_ends_the_task_with_a_clear_error(editor, fake_provider) -> None:
    fake_provider.script({"endless": True, "text": "w" * 1000})
    fake = await editor("visual-studio-code", init_options=provider_options(fake_provider))
    result = await fake.command("lich.ask", {"prompt": "talk forever"}, timeout_s=WAIT_S)
    assert result["stopped_reason"] == "error"
    assert result["error"].startswith("response_too_large: ")
    await fake.wait_for_event("run_end")
    await fake.wait_for_message("failed: response_too_large")
    # About a megabyte of text streamed, yet only a few coalesced notifications carried it.
    events = fake.events
    texts = _text_events(fake)
    run_start = next(e for e in events if e["type"] == "run_start")
    run_end = next(e for e in events if e["type"] == "run_end")
    duration_s = run_end["ts"] - run_start["ts"]
    assert texts, "some text was shown"
    assert len(texts) <= duration_s / EVENT_COALESCE_INTERVAL_S + 2, (len(texts), duration_s)
    assert any(e["data"].get("coalesced", 1) > 1 for e in texts)
    # Each message to the editor is bounded; what was cut is said.
    for event in events:
        assert _wire_size(event) <= MAX_EDITOR_MESSAGE_BYTES
    for message in _log_payloads(fake) + [text for _, text in fake.messages]:
        assert _wire_size(message) <= MAX_EDITOR_MESSAGE_BYTES
    assistant = [m for m in _log_payloads(fake) if "assistant: " in m]
    assert assistant and "… [cut " in assistant[-1] and assistant[-1].endswith(" chars]")
    await _wait_for_disconnects(fake_provider, 1)
    assert fake_provider.disconnects == [1]


async def test_cancelling_a_long_answer_sends_a_bounded_transcript(editor, fake_provider) -> None:
    # 300 KB of text, then the model goes quiet: the task sits with it until cancelled.
    fake_provider.script({"endless": True, "text": "v" * 1000, "stall_after_chunks": 300})
    fake = await editor("neovim", init_options=provider_options(fake_provider))
    _, ask = fake.start_command("lich.ask", {"prompt": "talk, then stall"})
    await fake.wait_until(
        lambda: _streamed_chars(fake) == 300_000, what="300 000 streamed characters"
    )
    await fake.command("lich.cancel", {})
    result = await bounded(ask, WAIT_S, "the answer to lich.ask")
    assert result["stopped_reason"] == "aborted"
    await fake.wait_for_log("assistant: ")
    for message in _log_payloads(fake):
        assert _wire_size(message) <= MAX_EDITOR_MESSAGE_BYTES
    (assistant,) = [m for m in _log_payloads(fake) if "assistant: " in m]
    assert "… [cut " in assistant
    await _wait_for_disconnects(fake_provider, 1)
    assert fake_provider.disconnects == [1]


async def test_streamed_text_is_coalesced_in_order(editor, fake_provider) -> None:
    # 400 small pieces over ~2 s, then a tool call: text and other events keep their order.
    fake_provider.script(
        {
            "text": "".join(f"<{i}>" for i in range(400)),
            "chunks": 400,
            "chunk_delay_s": 0.005,
            "tool_calls": [{"name": "find_files", "arguments": {"pattern": "*.nothing"}}],
        },
        {"text": "done"},
    )
    fake = await editor("visual-studio-code", init_options=provider_options(fake_provider))
    result = await fake.command("lich.ask", {"prompt": "stream then call"}, timeout_s=WAIT_S)
    assert result["stopped_reason"] == "final"
    await fake.wait_for_event("run_end")
    events = fake.events
    first_turn = [e for e in events if e["type"] == "text_delta" and e["data"]["turn"] == 1]
    assert "".join(e["data"]["text"] for e in first_turn) == "".join(f"<{i}>" for i in range(400))
    assert len(first_turn) < 400
    kinds = [e["type"] for e in events]
    last_text = max(i for i, e in enumerate(events) if e in first_turn)
    assert last_text < kinds.index("llm_end") < kinds.index("tool_call_start")
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs)


# --- bad input from the editor --------------------------------------------------------------------


async def test_ask_with_an_absurd_range_is_invalid_params(editor, root: Path) -> None:
    (root / "a.py").write_text("x = 1\n", encoding="utf-8")
    fake = await editor("visual-studio-code")
    uri = uri_of(root / "a.py")
    far = {"start": {"line": 10**18, "character": 0}, "end": {"line": 10**18, "character": 10**18}}
    with pytest.raises(JsonRpcException) as caught:
        await fake.command("lich.ask", {"prompt": "p", "uri": uri, "range": far})
    assert caught.value.code == -32602
    assert caught.value.message.startswith("lich.ask: field 'range'")
    with pytest.raises(JsonRpcException) as caught:
        await fake.command("lich.read", {"uri": uri, "start": 10**18})
    assert caught.value.code == -32602
    assert _error_popups(fake) == []


# --- bookkeeping ----------------------------------------------------------------------------------


async def test_finished_tasks_are_pruned(editor, fake_provider) -> None:
    count = MAX_FINISHED_TASKS + 5
    fake_provider.script(*({"text": f"answer {i}"} for i in range(count)))
    fake = await editor("emacs", init_options=provider_options(fake_provider))
    results = []
    for start in range(0, count, 15):  # a few at a time: the status must not depend on order
        batch = [
            fake.command("lich.ask", {"prompt": f"q{i}"})
            for i in range(start, min(count, start + 15))
        ]
        results += await bounded(asyncio.gather(*batch), WAIT_S * 3, "a batch of lich.ask")
    assert all(r["stopped_reason"] == "final" for r in results)
    status = await fake.command("lich.status", {})
    tasks = status["tasks"]
    assert len(tasks) == MAX_FINISHED_TASKS
    assert all(t["state"] == "done" for t in tasks)
    kept = {t["task_id"] for t in tasks}
    assert len(kept) == MAX_FINISHED_TASKS
    # The oldest went first: the last one to finish is kept.
    assert results[-1]["task_id"] in kept


async def test_apply_patch_accepts_every_header_the_grammar_accepts(editor, root: Path) -> None:
    (root / "a.py").write_text("one = 1\n", encoding="utf-8")
    (root / "b.py").write_text("two = 2\n", encoding="utf-8")
    fake = await editor("visual-studio-code")
    hash_a = line_hash("one = 1")
    hash_b = line_hash("two = 2")
    patch = f"@@ a.py @@\n= 1:{hash_a}..1:{hash_a}\n~one = 10\n@@b.py\n= 1:{hash_b}..1:{hash_b}\n~two = 20\n"
    result = await fake.command("lich.applyPatch", {"patch": patch})
    assert result["ok"] is True, result
    assert (root / "a.py").read_text(encoding="utf-8") == "one = 10\n"
    assert (root / "b.py").read_text(encoding="utf-8") == "two = 20\n"
