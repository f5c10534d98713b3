"""The language server's side of the event contract, fed the shared fixtures
(tests/fixtures/events/*.json) as typed AgentEvents: what it sends on as `lich/event` (task_id
added, text deltas coalesced) still matches docs/lich-event.schema.json, and its transcript lines
(window/logMessage, the markdown transcript) read the dataclasses' fields.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from lich_core.agent.events import AgentEvent
from lich_core.tools.types import CancelToken
from lich_lsp.context import SessionContext
from lich_lsp.tasks import LichTask, TaskManager
from tests.support.event_schema import assert_valid_event, fixture_files, load_fixture


class _Server:
    """What TaskManager._on_event touches of the session: its port's events, its log."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.logged: list[str] = []
        self.port = SimpleNamespace(
            send_event=lambda params: self.sent.append(("lich/event", params))
        )
        self.log = lambda message, *kind: self.logged.append(message)


def _feed(name: str) -> tuple[LichTask, _Server]:
    server = _Server()
    # Only the port and the log are reached while events arrive; the other parts stay unused.
    ctx = SessionContext(
        port=server.port,  # type: ignore[arg-type]
        messages=server,  # type: ignore[arg-type]
        documents=None,  # type: ignore[arg-type]
        holder=None,  # type: ignore[arg-type]
        features=None,  # type: ignore[arg-type]
        root=None,  # type: ignore[arg-type]
    )
    manager = TaskManager(ctx=ctx, journal=None, runtimes=None)  # type: ignore[arg-type]
    task = LichTask("t9", "title", "prompt", "apply", CancelToken(), workspace=None)  # type: ignore[arg-type]
    for payload in load_fixture(name):
        if (
            "cut" not in payload["data"]
        ):  # the server cuts events itself, it never receives cut ones
            manager._on_event(task, AgentEvent.from_dict(payload))
    manager._send_text(task)
    manager._flush_text(task)
    return task, server


@pytest.mark.parametrize("name", [path.stem for path in fixture_files()])
async def test_what_the_server_sends_matches_the_schema(name: str) -> None:
    task, server = _feed(name)
    received = [payload for payload in load_fixture(name) if "cut" not in payload["data"]]
    sent = [params for method, params in server.sent]
    assert {method for method, _ in server.sent} == {"lich/event"}
    for params in sent:
        assert_valid_event(params, f"{name}: sent")
        assert params["task_id"] == "t9"
    assert [p["type"] for p in sent if p["type"] != "text_delta"] == [
        p["type"] for p in received if p["type"] != "text_delta"
    ]
    # Coalescing keeps every streamed character, in order, per turn.
    for turn in {p["data"]["turn"] for p in received if p["type"] == "text_delta"}:
        texts = [
            p["data"]["text"]
            for p in received
            if p["type"] == "text_delta" and p["data"]["turn"] == turn
        ]
        out = [
            p["data"]["text"]
            for p in sent
            if p["type"] == "text_delta" and p["data"]["turn"] == turn
        ]
        assert "".join(out) == "".join(texts)
    seqs = [p["seq"] for p in sent]
    assert seqs == sorted(seqs)


async def test_transcript_lines_from_a_fixture_run() -> None:
    task, server = _feed("run_tools_retry")
    assert task.turns == 2 and task.tool_calls == 2
    assert task.transcript == [
        "plugin warning: plugin .lich/plugins/lint.py: SyntaxError: invalid syntax (lint.py, line 3)",
        "assistant: Let me look at the file first.",
        '→ read_file {"end": 3, "path": "src/app.py"}',
        "← read_file ok: 1:a3|def main():\n2:9f|    return 1\n3:0c|",
        '→ apply_patch {"input": "@@ src/app.py\\n= 2:9f..2:9f\\n~    return 2\\n"}',
        "← apply_patch error: edit_rejected: stale_document: src/app.py changed in the editor; read it again",
        "provider fake failed (network): retrying",
        "assistant: The answer is 42.",
    ]
    assert server.logged == [f"[t9] {line}" for line in task.transcript]
    task, _ = _feed("run_failover")
    assert "provider a failed (bad_request): failing over to b" in task.transcript
    assert (
        "plugin warning: plugin 'audit': before_llm_call raised KeyError: 'turn'" in task.transcript
    )
    assert not any("wor" in line for line in task.transcript if line.startswith("assistant"))
    task, _ = _feed("run_error")
    assert task.transcript == [
        "provider fake failed (rate_limit): retrying",
        "error: provider 'fake' at http://127.0.0.1:8765/v1: auth: HTTP 401: invalid API key (check api_key_env)",
    ]
