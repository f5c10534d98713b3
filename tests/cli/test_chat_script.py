"""`lich chat` without a terminal (issue #46): each line of stdin is a prompt or a /command,
the output is plain text; the thread is the one `lich threads` lists and an editor continues
(pytest-lsp against a real `lich-lsp`), and the terminal continues an editor's thread."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from lich_core.tools.types import ToolContext
from tests.support.cli_runner import CliResult, run_lich, run_lich_subprocess
from tests.support.fake_provider import FakeProviderServer

# The LSP harness sits beside the LSP tests (no package there).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))
from lsp_harness import provider_options, start_session, stop_session  # noqa: E402


def provider_env(monkeypatch: pytest.MonkeyPatch, fake: FakeProviderServer) -> None:
    monkeypatch.setenv("LICH_BASE_URL", fake.url + "/v1")
    monkeypatch.setenv("LICH_MODEL", "fake-model")
    monkeypatch.setenv("LICH_PROVIDER_KIND", "openai_compat")


def chat(work: Path, lines: str, *args: str) -> CliResult:
    return run_lich("chat", "--work-dir", str(work), *args, cwd=work, stdin=lines)


def messages_text(request: dict[str, Any]) -> str:
    return json.dumps(request["json"]["messages"], ensure_ascii=False)


def threads(work: Path) -> list[dict[str, Any]]:
    listed = run_lich("threads", "--json", "--work-dir", str(work), cwd=work)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def test_scripted_prompts_commands_and_a_rewind_in_plain_text(
    tmp_path: Path, fake_provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three lines: a prompt that writes a file (its diff and tool line in plain text), a
    follow-up of two lines (a trailing backslash joins them), /threads, /show 1 and /rewind 1,
    which restores the file with no question (the line is the decision)."""
    work = tmp_path / "ws"
    work.mkdir()
    (work / "a.txt").write_text("old\n", encoding="utf-8")
    provider_env(monkeypatch, fake_provider)
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "a.txt", "content": "new\n"}}
            ]
        },
        {"text": "Wrote **it**."},
        {"text": "Second answer."},
    )
    done = chat(work, "write a.txt\nfollow-up line one\\\nline two\n/threads\n/show 1\n/rewind 1\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n" in out
    assert "  [1] write_file a.txt · ok · " in out
    assert "Wrote **it**.\n" in out  # plain text: the markdown as the model wrote it
    assert "Second answer.\n" in out
    # The two lines were one prompt, in the same thread as the first.
    follow_up = messages_text(fake_provider.requests[2])
    assert "follow-up line one\\nline two" in follow_up and "write a.txt" in follow_up
    (thread,) = [line for line in out.splitlines() if line.startswith("* ")]
    thread_id = thread.split()[1]
    assert "2 turns" in thread and thread.endswith("write a.txt")
    assert '"path": "a.txt"' in out  # /show 1: the call's arguments
    assert 'lich: rewound to before "write a.txt" (2 turns); restored a.txt' in out
    assert (work / "a.txt").read_text(encoding="utf-8") == "old\n"
    assert done.stderr.rstrip().endswith(f"lich: thread {thread_id}")
    assert [t["thread"] for t in threads(work)] == [thread_id]


def test_scripted_bad_input_is_one_line_each(
    tmp_path: Path, fake_provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unknown commands, a rewind before any turn, an unknown thread: one line each with its
    prefix, no traceback, no model call; `--thread` naming no thread fails before anything."""
    work = tmp_path / "ws"
    work.mkdir()
    provider_env(monkeypatch, fake_provider)
    done = chat(work, "/frobnicate\n/rewind 1\n/thread nope\n/undo\n/show 3\n")
    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert lines == [
        "unknown_command: /frobnicate (/help lists the commands)",
        "no_thread: nothing to rewind yet (this thread has no turn)",
        "unknown_thread: nope (/threads lists them)",
        "nothing_to_undo: the last turn changed no file that can be undone",
        "no_such_call: 3 (the calls of this chat are 1 to 0)",
    ], done.stderr
    assert fake_provider.requests == []
    missing = chat(work, "hello\n", "--thread", "20200101-000000-abcdef")
    assert missing.returncode == 1
    assert missing.stderr.startswith("lich: unknown_thread: 20200101-000000-abcdef")
    assert fake_provider.requests == []


def test_the_question_is_the_editors_text(tmp_path: Path) -> None:
    """The terminal asks what the language server asks, word for word."""
    from lich_cli.chat.approvals import question
    from lich_core.config import load_config
    from lich_core.runtime import build_tool_runtime
    from lich_lsp.approvals import _question

    runtime = build_tool_runtime(load_config(str(tmp_path)))
    for name, args in (
        ("terminal", {"command": "make test"}),
        ("fetch_url", {"url": "https://docs.python.org/3/"}),
    ):
        tool = runtime.registry.get(name)
        assert tool is not None
        ctx = ToolContext(work_dir=tmp_path)
        asked = question(tool, args, ctx)
        assert asked == _question(tool, args, tool.capability, ctx)
        assert asked.startswith(f"lich wants to run {name}")


async def test_a_thread_goes_from_the_terminal_to_an_editor_and_back(
    tmp_path: Path, fake_provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lich chat` starts a thread; an editor's lich.ask {thread} continues it with the
    terminal's turn in its history; `lich chat --thread ID` continues the editor's turn."""
    work = (tmp_path / "ws").resolve()
    work.mkdir()
    provider_env(monkeypatch, fake_provider)
    fake_provider.script(
        {"text": "Terminal answer ONE."},
        {"text": "Editor answer TWO."},
        {"text": "Terminal answer THREE."},
    )
    first = await asyncio.to_thread(
        run_lich_subprocess, "chat", "--work-dir", str(work), cwd=work, stdin="from the terminal\n"
    )
    assert first.returncode == 0, first.stderr
    thread = first.stderr.strip().splitlines()[-1].removeprefix("lich: thread ")
    client = await start_session(work, init_options=provider_options(fake_provider))
    try:
        asked = await client.command("lich.ask", {"prompt": "from the editor", "thread": thread})
        assert asked["thread"] == thread and asked["turn"] == 2, asked
    finally:
        await stop_session(client)
    assert not client.failures, client.failures
    sent = messages_text(fake_provider.requests[1])
    assert "from the terminal" in sent and "Terminal answer ONE." in sent

    again = await asyncio.to_thread(
        run_lich_subprocess,
        "chat",
        "--work-dir",
        str(work),
        "--thread",
        "latest",
        cwd=work,
        stdin="back in the terminal\n",
    )
    assert again.returncode == 0, again.stderr
    assert "Terminal answer THREE." in again.stdout
    sent = messages_text(fake_provider.requests[2])
    assert "Terminal answer ONE." in sent and "Editor answer TWO." in sent
    (row,) = await asyncio.to_thread(threads, work)
    assert row["thread"] == thread and row["turns"] == 3


async def test_an_editor_rewinds_a_terminal_turn_and_its_file(
    tmp_path: Path, fake_provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal's turns go to the editors' undo journal: lich.rewind over the wire takes
    back a `lich chat` turn and restores the file it wrote, with the editor's own edit."""
    work = (tmp_path / "ws").resolve()
    work.mkdir()
    (work / "a.py").write_text("value = 1\n", encoding="utf-8")
    provider_env(monkeypatch, fake_provider)
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "a.py", "content": "value = 2\n"}}
            ]
        },
        {"text": "Set it to 2."},
    )
    done = await asyncio.to_thread(
        run_lich_subprocess, "chat", "--work-dir", str(work), cwd=work, stdin="make it TWO\n"
    )
    assert done.returncode == 0, done.stderr
    assert (work / "a.py").read_text(encoding="utf-8") == "value = 2\n"
    thread = done.stderr.strip().splitlines()[-1].removeprefix("lich: thread ")
    client = await start_session(work, init_options=provider_options(fake_provider))
    try:
        uri = client.open(work / "a.py")
        rewound = await client.command("lich.rewind", {"thread": thread, "turn": 1})
        assert rewound["ok"] is True, rewound
        assert [(f["path"], f["outcome"]) for f in rewound["files"]] == [("a.py", "undone")]
        assert client.text(uri) == "value = 1\n"
    finally:
        await stop_session(client)
    assert not client.failures, client.failures


def test_undo_takes_back_the_last_turns_edits_and_model_switches(
    tmp_path: Path, fake_provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/undo restores what the last turn wrote and keeps the conversation (the next prompt is
    told); /model names the model, `/model NAME` sends the next turn to NAME; `lich --help`
    lists `lich chat`."""
    work = tmp_path / "ws"
    work.mkdir()
    (work / "a.txt").write_text("old\n", encoding="utf-8")
    provider_env(monkeypatch, fake_provider)
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "a.txt", "content": "new\n"}}
            ]
        },
        {"text": "Wrote it."},
        {"text": "Noted."},
    )
    done = chat(work, "write a.txt\n/undo\n/model\n/model other-model\nwhat now?\n")
    assert done.returncode == 0, done.stderr
    assert (work / "a.txt").read_text(encoding="utf-8") == "old\n"
    undone = [line for line in done.stdout.splitlines() if line.startswith("lich: undo t")]
    assert len(undone) == 1 and undone[0].endswith("(write a.txt): restored a.txt"), done.stdout
    assert "lich: model openai_compat fake-model" in done.stdout
    assert "lich: model other-model from the next turn" in done.stdout
    last = fake_provider.requests[-1]["json"]
    assert last["model"] == "other-model"
    sent = json.dumps(last["messages"])
    assert "write a.txt" in sent and "took back your changes to a.txt" in sent
    usage = run_lich("--help", cwd=work)
    assert "lich chat [--thread ID|latest]" in usage.stdout


async def test_always_is_remembered_for_its_scope_in_the_shared_store(tmp_path: Path) -> None:
    """`a` allows the call and every later one in its scope without asking (the store the
    editors and ACP read); a fetch's scope is its host; `n` denies; a deny policy never asks."""
    from lich_cli.chat.approvals import ChatApprovalCheck
    from lich_core.approvals import ApprovalStore
    from lich_core.config import load_config
    from lich_core.runtime import build_tool_runtime

    asked: list[tuple[str, str]] = []
    answers = ["a", "a", "n"]

    async def asker(question: str, scope: str) -> str:
        asked.append((question, scope))
        return answers.pop(0)

    check = ChatApprovalCheck(tmp_path, asker)
    runtime = build_tool_runtime(load_config(str(tmp_path)))
    terminal, fetch = runtime.registry.get("terminal"), runtime.registry.get("fetch_url")
    assert terminal is not None and fetch is not None
    ctx = ToolContext(work_dir=tmp_path)
    assert await check(terminal, {"command": "make"}, ctx) is None
    assert await check(terminal, {"command": "make test"}, ctx) is None  # not asked again
    assert [scope for _, scope in asked] == ["terminal in this workspace"]
    docs = {"url": "https://docs.python.org/3/"}
    assert await check(fetch, docs, ctx) is None
    assert asked[-1][1] == "fetch_url on docs.python.org in this workspace"
    refusal = await check(fetch, {"url": "https://example.com/"}, ctx)
    assert refusal == "approval_denied: the user denied fetch_url"
    assert len(asked) == 3
    store = ApprovalStore(tmp_path)  # what the editors read
    assert store.is_always("terminal") and store.is_always("fetch_url@docs.python.org")
    assert not store.is_always("fetch_url@example.com")
    denying = ToolContext(work_dir=tmp_path, settings={"approval": {"terminal": "deny"}})
    refused = await ChatApprovalCheck(tmp_path, asker)(terminal, {"command": "x"}, denying)
    assert refused == "approval_denied: terminal is denied by the approval policy"
    assert len(asked) == 3


def test_streamed_markdown_is_cut_into_whole_blocks() -> None:
    """The terminal renders a block once it is complete: a paragraph or a table at a blank
    line, a fenced block (blank lines inside it included) at its closing fence, however the
    text is split into deltas."""
    from lich_cli.chat.render import BlockSplitter

    text = (
        "Intro paragraph\nstill intro.\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "Before the fence.\n```python\nx = 1\n\ny = 2\n```\n"
        "The tail, not yet ended"
    )
    expected = [
        "Intro paragraph\nstill intro.\n\n",
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n",
        "Before the fence.\n",
        "```python\nx = 1\n\ny = 2\n```\n",
    ]
    for size in (1, 3, 7, len(text)):
        splitter = BlockSplitter()
        blocks = []
        for start in range(0, len(text), size):
            blocks += splitter.feed(text[start : start + size])
        assert blocks == expected, size
        assert splitter.rest() == "The tail, not yet ended"


def test_a_failed_turn_is_one_error_line_and_exit_status_1(
    tmp_path: Path, fake_provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider refuses the request: the turn's error is one `lich: error:` line on stderr
    (no traceback), the next line is still read and answered, and the exit status says a turn
    failed."""
    work = tmp_path / "ws"
    work.mkdir()
    provider_env(monkeypatch, fake_provider)
    fake_provider.script(
        {"status": 400, "body": {"error": {"message": "bad request"}}}, {"text": "Fine now."}
    )
    done = chat(work, "first\nsecond\n")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("lich: error:")]
    assert len(errors) == 1 and "400" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert "Fine now.\n" in done.stdout
