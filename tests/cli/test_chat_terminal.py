"""`lich chat` as a person uses it: a real terminal (tmux), keys sent one by one, the screen read
back, against the fake provider on 127.0.0.1 (issue #46).

Every wait is on the terminal's output (tmux pipes the pane's output into a FIFO the test
blocks on) or on the fake provider's records, never on a clock; SCREEN_WAIT_S only bounds a hang.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lich_core.agent.sessions import SessionStore
from lich_core.config import load_config
from tests.support.cli_runner import run_lich
from tests.support.fake_provider import FakeProviderServer
from tests.support.tmux import Terminal

# The LSP harness sits beside the LSP tests (no package there).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))
from lsp_harness import provider_options, start_session, stop_session  # noqa: E402

SCREEN_WAIT_S = 60.0
DONE = "lich-chat-done"
WIDTH, HEIGHT = 120, 50

pytestmark = pytest.mark.timeout(180)


class ChatTerminal(Terminal):
    """`lich chat` in a tmux pane: send keys, wait for the screen to show something."""

    def shows_text(self, needle: str, count: int = 1) -> str:
        return self.shows(lambda screen: screen.count(needle) >= count, repr(needle))

    def type_line(self, text: str) -> None:
        self.type(text)
        self.keys("Enter")

    def wait_exit(self) -> None:
        self.wait_for(DONE, "lich chat did not exit")


def start_chat(tmp_path: Path, work: Path, fake: FakeProviderServer, *args: str) -> ChatTerminal:
    env = dict(os.environ)
    env.update(
        {
            "TERM": "xterm-256color",
            "LICH_BASE_URL": fake.url + "/v1",
            "LICH_MODEL": "fake-model",
            "LICH_PROVIDER_KIND": "openai_compat",
            # A stale exported width: the pane's real one (WIDTH) must win.
            "COLUMNS": "40",
        }
    )
    socket = f"lich-chat-{os.getpid()}-{tmp_path.name}"
    lich = shlex.join([sys.executable, "-m", "lich_cli", "chat", "--work-dir", str(work), *args])
    # The pane stays open after lich exits (the test reads its last words): the shell waits for
    # a line no one types, until the test closes the terminal.
    # The terminal's settings before and after, which lich must give back as it found them.
    stty = [shlex.quote(str(tmp_path / name)) for name in ("stty.before", "stty.after")]
    command = (
        f"stty -g > {stty[0]}; {lich}; echo exit=$?; stty -g > {stty[1]}; "
        f"tmux -L {shlex.quote(socket)} wait-for -S {DONE}; read -r never"
    )
    # The screen read is the pane and its scrollback, wrapped lines joined.
    return ChatTerminal.start(
        socket, "chat", command,
        width=WIDTH, height=HEIGHT, cwd=work, fifo=tmp_path / "pane.fifo", env=env,
        wait_s=SCREEN_WAIT_S, capture=("-J", "-S", "-"),
    )  # fmt: skip


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[list[ChatTerminal]]:
    opened: list[ChatTerminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def messages_text(request: dict[str, Any]) -> str:
    return json.dumps(request["json"]["messages"], ensure_ascii=False)


def threads_of(work: Path) -> list[dict[str, Any]]:
    listed = run_lich("threads", "--json", "--work-dir", str(work), cwd=work)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def test_send_stream_follow_up_queue_and_approvals_answered_y_and_n(
    tmp_path: Path, work: Path, fake_provider: FakeProviderServer, chat: list[ChatTerminal]
) -> None:
    """A conversation of three prompts in one thread: the first answer streams in as rendered
    markdown; the second asks to run `echo`, and while its question waits a third prompt is typed
    (shown queued); `y` runs the command, the queued prompt is sent when the turn ends, its own
    command is denied with `n`. /threads lists the thread with its three turns; Ctrl-D quits."""
    fake_provider.script(
        {"text": "First **answer** here.\n\n```python\nprint('fenced')\n```\n", "chunks": 6},
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo chat-ran-this"}}]},
        {"text": "It ran."},
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo never-run"}}]},
        {"text": "Denied, fine."},
    )
    terminal = start_chat(tmp_path, work, fake_provider)
    chat.append(terminal)
    # Typed as soon as the greeting shows, maybe before the input line is live: the keys wait
    # in the terminal and arrive as pressed (the Enter sends, nothing is echoed twice).
    terminal.shows_text("/help for commands")
    terminal.type_line("first question")
    screen = terminal.shows_text("model call(s)")  # the turn's end line
    assert "First answer here." in screen and "print('fenced')" in screen
    assert "**answer**" not in screen and "```" not in screen  # rendered, not the raw markdown

    terminal.type_line("second question")
    question = "? lich wants to run terminal (process/exec): runs `echo chat-ran-this`"
    screen = terminal.shows_text(question)
    assert "y allow once · a always (terminal in this workspace) · n deny" in screen
    terminal.type_line("third question")  # typed while the question waits: queued
    terminal.shows_text("queued: third question")
    terminal.keys("y")
    screen = terminal.shows_text("model call(s)", count=2)
    assert re.search(r"✓ \[1\] terminal echo chat-ran-this · ok · \d+ ms", screen), screen
    terminal.shows(lambda s: "echo never-run" in s and s.count("y allow once") == 2, "question 2")
    terminal.keys("n")
    screen = terminal.shows_text("model call(s)", count=3)  # the third turn's end line
    assert "› third question" in screen  # the queued prompt, shown again when it is sent
    assert re.search(r"✗ \[2\] terminal echo never-run · failed", screen), screen

    requests = fake_provider.requests
    assert len(requests) == 5
    (first_prompt,) = [m for m in requests[0]["json"]["messages"] if m["role"] == "user"]
    assert first_prompt["content"] == "first question"
    assert screen.count("first question") == 1  # no echo of the keys typed ahead
    # One thread: each request carries the turns before it.
    assert "first question" in messages_text(requests[1])
    assert "First **answer** here." in messages_text(requests[1])
    assert "chat-ran-this" in messages_text(requests[2])  # the command's output
    third = messages_text(requests[3])
    assert "second question" in third and "It ran." in third and "third question" in third
    assert "approval_denied: the user denied terminal" in messages_text(requests[4])

    (thread,) = threads_of(work)
    assert thread["turns"] == 3 and thread["title"] == "first question"
    terminal.type_line("/threads")
    terminal.shows(
        lambda s: re.search(rf"\* {thread['thread']}\s+3 turns .* first question", s) is not None,
        "the thread in /threads",
    )
    terminal.keys("C-d")
    terminal.wait_exit()
    screen = terminal.shows_text("exit=0")
    assert f"continue with: lich chat --thread {thread['thread']}" in screen
    before, after = ((tmp_path / name).read_text() for name in ("stty.before", "stty.after"))
    assert after == before  # echo, line editing and Enter as they were


def test_escape_stops_a_streaming_turn_and_rewind_restores_the_file(
    tmp_path: Path, work: Path, fake_provider: FakeProviderServer, chat: list[ChatTerminal]
) -> None:
    """A turn writes a.txt (its diff on screen); /rewind 1 asks with the turn's prompt: Escape
    says no (nothing changes), `y` restores the file. A turn that streams one paragraph and then stalls shows that paragraph
    while running; Escape stops it: the provider sees the stream closed. A turn whose answer
    does not start shows a spinner with the seconds waited; Ctrl-C stops it."""
    (work / "a.txt").write_text("old line\n", encoding="utf-8")
    first_block = "Streaming part one.\n\n"
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "a.txt", "content": "new line\n"}}
            ]
        },
        {"text": "Wrote it."},
        # The role event and the first half (exactly the first paragraph), then silence.
        {"text": first_block + "X" * len(first_block), "chunks": 2, "stall_after_chunks": 2},
        # Not a byte of the answer: the spinner and the seconds waited, until Ctrl-C.
        {"text": "never sent", "stall_after_chunks": 0},
        {"text": "never sent either", "stall_after_chunks": 0},
    )
    terminal = start_chat(tmp_path, work, fake_provider)
    chat.append(terminal)
    terminal.shows_text("Ctrl-D quits")  # the prompt is up (its status line)
    terminal.type_line("change a.txt")
    screen = terminal.shows_text("model call(s)")
    assert "-old line" in screen and "+new line" in screen
    assert (work / "a.txt").read_text(encoding="utf-8") == "new line\n"

    terminal.type_line("/rewind 1")
    terminal.shows_text("Rewind turn 1 of this thread? Turn 1: change a.txt")
    terminal.keys("Escape")  # no
    terminal.shows_text("lich: not rewound")
    assert (work / "a.txt").read_text(encoding="utf-8") == "new line\n"
    terminal.type_line("/rewind 1")
    terminal.shows_text("Rewind turn 1 of this thread? Turn 1: change a.txt", count=2)
    terminal.keys("y")
    screen = terminal.shows_text("restored a.txt")
    assert (work / "a.txt").read_text(encoding="utf-8") == "old line\n"
    (thread,) = threads_of(work)
    assert thread["turns"] == 0  # the rewound turn is no live turn of it any more

    terminal.type_line("tell me a long story")
    terminal.shows_text("Streaming part one.")
    terminal.shows_text("Esc stops")  # the turn is still running
    terminal.keys("Escape")
    assert fake_provider.wait_closed_early(-1, timeout_s=SCREEN_WAIT_S) is not None
    terminal.shows_text("aborted")
    # The rewound turn is not in the next request's history.
    assert "change a.txt" not in messages_text(fake_provider.requests[-1])

    terminal.type_line("and another")
    terminal.shows(
        lambda s: re.search(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for the model · \d+\.\d s", s) is not None,
        "the spinner with the seconds waited",
    )
    assert fake_provider.wait_for_requests(4, timeout_s=SCREEN_WAIT_S)
    terminal.keys("C-c")  # Ctrl-C stops a turn too
    assert fake_provider.wait_closed_early(3, timeout_s=SCREEN_WAIT_S) is not None
    terminal.shows_text("aborted", count=2)
    # Ctrl-D while a turn runs: the turn is stopped and ends as stopped turns do.
    terminal.type_line("one more")
    assert fake_provider.wait_for_requests(5, timeout_s=SCREEN_WAIT_S)
    terminal.keys("C-d")
    assert fake_provider.wait_closed_early(4, timeout_s=SCREEN_WAIT_S) is not None
    terminal.wait_exit()
    terminal.shows_text("exit=0")
    store = SessionStore.for_config(load_config(str(work)))
    (thread,) = [info.session_id for info in store.list()]
    turns = store.replay(thread)[1].turns
    assert [turn.prompt for turn in turns[-3:]] == [
        "tell me a long story",
        "and another",
        "one more",
    ]
    assert [turn.stopped_reason for turn in turns[-3:]] == ["aborted"] * 3


def test_history_completion_alt_enter_and_ctrl_c_twice(
    tmp_path: Path,
    work: Path,
    fake_provider: FakeProviderServer,
    chat: list[ChatTerminal],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Continuing a thread (`--thread ID`): Up brings back its prompt before the other thread's;
    after `/thread OTHER`, Up brings back OTHER's. Tab completes `@a.` to a workspace path and
    `/thre` to a command; Alt+Enter and Shift+Enter add a line (one prompt of three lines is
    sent); Ctrl-C clears the line, and twice at an empty prompt quits."""
    (work / "a.txt").write_text("text\n", encoding="utf-8")
    fake_provider.script(
        {"text": "Earlier answer."}, {"text": "Other answer."}, {"text": "Lines received."}
    )
    monkeypatch.setenv("LICH_BASE_URL", fake_provider.url + "/v1")
    monkeypatch.setenv("LICH_MODEL", "fake-model")
    threads = []
    for prompt in ("an earlier prompt", "the other thread's prompt"):
        done = run_lich("chat", "--work-dir", str(work), cwd=work, stdin=prompt + "\n")
        assert done.returncode == 0, done.stderr
        threads.append(done.stderr.strip().splitlines()[-1].removeprefix("lich: thread "))
    terminal = start_chat(tmp_path, work, fake_provider, "--thread", threads[0])
    chat.append(terminal)
    terminal.shows_text("Ctrl-D quits")
    terminal.keys("Up")
    terminal.shows_text("› an earlier prompt")
    terminal.keys("C-c")  # the line is cleared, nothing is sent
    terminal.type_line(f"/thread {threads[1]}")
    # Said once the prompt is made again with that thread's history.
    terminal.shows_text(f"continuing thread {threads[1]}")
    terminal.keys("Up")
    terminal.shows_text("› the other thread's prompt")
    terminal.keys("C-c")  # the line is cleared, nothing is sent
    terminal.type("see @a.")
    terminal.shows(lambda s: re.search(r"^ +@a\.txt", s, re.M) is not None, "the path in the menu")
    terminal.keys("Tab")
    terminal.shows_text("› see @a.txt")
    terminal.keys("C-c")
    terminal.type("/thre")
    terminal.shows_text("continue another thread")  # the menu, with each command's help
    terminal.keys("Tab")
    terminal.shows_text("› /threads")
    terminal.keys("C-c")
    terminal.type("line one")
    terminal.keys("M-Enter")
    terminal.type("line two")
    terminal.type("\x1b[13;2u")  # Shift+Enter, as terminals with CSI u report it
    terminal.type("line three")
    terminal.keys("Enter")
    terminal.shows_text("model call(s)")  # the turn's end line
    assert len(fake_provider.requests) == 3
    last_user = [m for m in fake_provider.requests[2]["json"]["messages"] if m["role"] == "user"]
    assert last_user[-1]["content"] == "line one\nline two\nline three"
    assert "the other thread's prompt" in messages_text(fake_provider.requests[2])
    terminal.keys("C-c")
    terminal.shows_text("Ctrl-C again (or Ctrl-D) to quit")
    terminal.keys("C-c")
    terminal.wait_exit()
    terminal.shows_text("exit=0")


async def test_the_terminal_continues_an_editors_thread_and_the_editor_continues_it(
    tmp_path: Path, work: Path, fake_provider: FakeProviderServer, chat: list[ChatTerminal]
) -> None:
    """A thread started by an editor (lich.ask over the wire, a real lich-lsp) is continued in
    `lich chat --thread ID` with the editor's turn in its history; the editor's next lich.ask
    {thread} then has the terminal's turn in its own."""
    root = work.resolve()
    fake_provider.script(
        {"text": "Editor answer ONE."},
        {"text": "Terminal answer TWO."},
        {"text": "Editor answer THREE."},
    )
    client = await start_session(root, init_options=provider_options(fake_provider))
    try:
        one = await client.command("lich.ask", {"prompt": "asked in the editor"})
        thread = one["thread"]
        terminal = start_chat(tmp_path, root, fake_provider, "--thread", thread)
        chat.append(terminal)
        await asyncio.to_thread(terminal.shows_text, f"thread {thread}")
        await asyncio.to_thread(terminal.shows_text, "Ctrl-D quits")
        terminal.type_line("asked in the terminal")
        # The turn's end line (the answer alone may still be the status line's).
        await asyncio.to_thread(terminal.shows_text, "model call(s)")
        sent = messages_text(fake_provider.requests[1])
        assert "asked in the editor" in sent and "Editor answer ONE." in sent
        terminal.keys("C-d")
        await asyncio.to_thread(terminal.wait_exit)

        three = await client.command("lich.ask", {"prompt": "back in the editor", "thread": thread})
        assert three["thread"] == thread and three["turn"] == 3, three
        sent = messages_text(fake_provider.requests[2])
        assert "asked in the terminal" in sent and "Terminal answer TWO." in sent
    finally:
        await stop_session(client)
    assert not client.failures, client.failures
