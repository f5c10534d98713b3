"""The chat (:LichChat, editors/nvim/lua/lich/chat.lua) in a real headless Neovim against the real
lich-lsp and the fake provider (tests/editors/nvim/chat.lua): two turns of one thread with the
history in the second request, the cursor left alone while an answer streams, <CR> and <C-s> in
the input, :LichAsk continuing the chat's thread, a provider error and a cancel in plain words,
`@` completion, :LichNewThread / :LichThreads / :LichRewind and a server restart; model text that
steers nothing (issue #43, tests/editors/nvim/chat_model_text.lua): an answer imitating the turn
headings, the rewind's question (headless, and in a real terminal under tmux), a tool name with a
newline. Runs under every Neovim test_nvim.py finds (Debian's 0.7.2 and the CI's 0.11)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.editors.test_nvim import (  # noqa: F401 - `nvim` and `workspace` are fixtures
    PLUGIN_DIR,
    PROCESS_TIMEOUT_S,
    SCENARIO_TIMEOUT_MS,
    SCENARIOS,
    assert_passed,
    nvim,
    run_scenario,
    workspace,
    write_provider_config,
)
from tests.support.fake_provider import FakeProviderServer
from tests.support.tmux import Terminal, shell_words

pytestmark = pytest.mark.nvim


def _messages(provider: FakeProviderServer, index: int) -> str:
    return json.dumps(provider.requests[index]["json"]["messages"])


def test_chat_turns_streaming_input_threads_rewind_and_restart(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    fake_provider.script(
        {"text": "Answer one.", "chunks": 3},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "Answer two."},
        {"text": "Answer three, streamed in pieces.", "chunks": 8, "chunk_delay_s": 0.05},
        {"text": "Answer four."},
        {"text": "Answer five."},
        {"text": "Answer six."},
        {"status": 401},
        {"text": "too late", "delay_s": 60},
        {"text": "never sent: the server is killed first", "delay_s": 60},
    )
    write_provider_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "chat", workspace, tmp_path)
    assert_passed(result)
    # The follow-up's request carries the first turn: its prompt and its answer.
    follow_up = _messages(fake_provider, 1)
    assert "first" in follow_up and "Answer one." in follow_up and "follow-up" in follow_up
    assert "typed in the input" in _messages(fake_provider, 4)
    assert "sent with ctrl-s" in _messages(fake_provider, 5)
    assert "Answer five." in _messages(fake_provider, 6)


def test_chat_draws_a_thread_with_diffs_folds_and_errors_and_a_long_one_quickly(
    nvim: str,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    """lich.thread's answer drawn without a server: edits as ```diff blocks inside closed folds,
    a refused tool and a provider error in plain words, a rewound turn marked; a 200-turn
    thread in under a second."""
    result = run_scenario(nvim, "chat_render", tmp_path, tmp_path)
    assert_passed(result)
    assert len(result["checks"]) >= 13


# Turn 2's answer: lines that read like the chat's own headings, the one the cursor goes to last.
TRAP_ANSWER = (
    "Before the trap.\n"
    "## You · turn 1\n"
    "first question\n"
    "\n"
    "## lich\n"
    "## You · turn 1 (rewound)\n"
    "# lich · thread fake\n"
    "_thread fake · 1 turn_\n"
    "▸ read_file hello.py · ok\n"
    "The line under the trap."
)
ODD_TOOL_NAME = "read_file\n## You · turn 1"


def _script_model_text(provider: FakeProviderServer) -> None:
    provider.script(
        {"text": "Answer one."},
        {"text": TRAP_ANSWER, "chunks": 5},
        {"tool_calls": [{"name": ODD_TOOL_NAME, "arguments": {"path": "hello.py\nsecond"}}]},
        {"text": "After the odd tool."},
    )


def test_model_text_steers_no_rewind_which_asks_first_with_the_turns_message(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """Issue #43, headless: an answer that imitates the turn headings does not move :LichRewind
    (the turn under the cursor is the plugin's extmark record); the rewind asks first with the
    turn's message, No sends no lich.rewind and Yes sends lich.rewind {turn: 2}. The odd tool
    name of the next turn renders too (the next test checks it alone)."""
    _script_model_text(fake_provider)
    write_provider_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "chat_model_text", workspace, tmp_path)
    assert_passed(result)
    assert [q["answer"] for q in result["values"]["questions"]] == [2, 2, 1]
    assert len(fake_provider.requests) == 4


def test_a_tool_name_with_a_newline_renders_escaped_live_and_after_a_restart(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """Issue #43, headless: a tool call whose name holds a newline no longer stops the thread from
    rendering: the chat and the transcript show the name escaped on one line, the answer after it
    streams in, and the thread drawn again from lich.thread after a server restart reads the
    same."""
    _script_model_text(fake_provider)
    write_provider_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "chat_model_text", workspace, tmp_path, {"skip_rewind": True})
    assert_passed(result)
    assert result["values"]["tool_line"].startswith("▸ read_file\\n## You · turn 1 ")
    # The model saw the tool fail by the name it chose, and the turn went on.
    assert json.dumps(ODD_TOOL_NAME) in json.dumps(fake_provider.requests[3]["json"]["messages"])


# --- the rewind's question as a person sees it: Neovim in a terminal (tmux) ---

TERMINAL_DONE = "lich-chat-done"
# Neovim's own vim.ui.select (inputlist()) ends its question with this line.
QUESTION_END = "Type number and <Enter>"


def scenario_env(
    scenario: str, root: Path, tmp_path: Path, result_file: Path, data: dict[str, Any]
) -> dict[str, str]:
    """The environment run_scenario gives harness.lua, for a Neovim started in a terminal."""
    env = dict(os.environ)
    env.update(
        {
            "LICH_TEST_RESULT": str(result_file),
            "LICH_TEST_SCENARIO": str(SCENARIOS / f"{scenario}.lua"),
            "LICH_TEST_WORKSPACE": str(root),
            "LICH_TEST_PYTHON": sys.executable,
            "LICH_TEST_TIMEOUT_MS": str(SCENARIO_TIMEOUT_MS),
            "LICH_TEST_DATA": json.dumps(data),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        }
    )
    return env


def scenario_command(binary: str) -> list[str]:
    """run_scenario's Neovim command line without --headless: Neovim draws on the terminal."""
    return [
        binary,
        "--clean",
        "-n",
        "-i",
        "NONE",
        "--cmd",
        f"set rtp^={PLUGIN_DIR}",
        "-c",
        f"luafile {SCENARIOS / 'harness.lua'}",
    ]


def scenario_in_terminal(
    binary: str,
    scenario: str,
    root: Path,
    tmp_path: Path,
    result_file: Path,
    socket: str,
    done: str,
    width: int,
    height: int,
) -> Terminal:
    """run_scenario's `scenario` ({"terminal": true}) with Neovim drawing on a real terminal, in
    a tmux session "chat"; when Neovim quits, the pane's shell signals the channel `done`."""
    env = scenario_env(scenario, root, tmp_path, result_file, {"terminal": True})
    env["TERM"] = "xterm-256color"
    nvim_command = shell_words(scenario_command(binary))
    # When Neovim quits, the shell signals a tmux channel the test waits on.
    command = f"{nvim_command}; tmux -L {shlex.quote(socket)} wait-for -S {done}"
    # A fresh tmux server on its own socket: it and the pane's shell get `env`.
    return Terminal.start(
        socket, "chat", command,
        width=width, height=height, cwd=root, fifo=tmp_path / "pane.fifo", env=env,
    )  # fmt: skip


def terminal_result(result_file: Path, output: str) -> dict[str, Any]:
    """What the scenario run in a terminal wrote, with `output` (what the screen showed) for
    assert_passed's message when it wrote none of its own."""
    assert result_file.exists(), f"nvim wrote no result\n{output}"
    result = json.loads(result_file.read_text(encoding="utf-8"))
    result.setdefault("output", output)
    return result


def _asks_about(turn: int) -> Callable[[str], bool]:
    """Whether the screen ends with the rewind's question, and it is about `turn` (earlier
    questions may still show above it)."""

    def predicate(screen: str) -> bool:
        shown = screen.rstrip()
        last = shown.rfind("Rewind turn ")
        return (
            last >= 0
            and shown[last:].startswith(f"Rewind turn {turn} of this thread?")
            and f"1: Yes, rewind turn {turn}\n2: No\n{QUESTION_END}" in shown[last:]
            and shown.endswith(":")
        )

    return predicate


def test_in_a_terminal_rewind_asks_with_the_turns_message_and_no_sends_nothing(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """Issue #43 in a real terminal: the same scenario with Neovim's own vim.ui.select (a numbered
    list) on the screen. With the cursor in turn 2's answer (which imitates "## You · turn 1"),
    the question on the screen names turn 2 and shows "second question"; the user types 2 (No:
    nothing is sent), 2 again to `:LichRewind 1`'s question about turn 1, then 1 (Yes):
    lich.rewind {turn: 2}."""
    _script_model_text(fake_provider)
    write_provider_config(tmp_path, fake_provider)
    result_file = tmp_path / "chat_model_text.json"
    screen = scenario_in_terminal(
        nvim, "chat_model_text", workspace, tmp_path, result_file,
        f"lich-chat-{os.getpid()}", TERMINAL_DONE, 160, 50,
    )  # fmt: skip
    try:
        shown = screen.shows(_asks_about(2), "the question about turn 2")
        assert "Turn 2: second question" in shown, shown
        screen.keys("2", "Enter")
        shown = screen.shows(_asks_about(1), ":LichRewind 1's question about turn 1")
        assert "Turn 1: first question" in shown, shown
        screen.keys("2", "Enter")
        shown = screen.shows(_asks_about(2), "the question about turn 2 again")
        screen.keys("1", "Enter")
        screen.wait_for(TERMINAL_DONE, "Neovim did not finish the scenario")
    finally:
        screen.close()
    result = terminal_result(result_file, shown)
    assert_passed(result)
    assert [q["answer"] for q in result["values"]["questions"]] == [2, 2, 1]
    assert result["values"]["rewinds"] == [{"thread": result["values"]["thread"], "turn": 2}]


def test_chat_queue_origin_diff_folds_toggle_q_and_ghost_colour(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """Issue #45, headless (tests/editors/nvim/chat_daily.lua): empty settings go out as `{}`;
    messages sent while a turn runs are queued, shown, taken back with dd and :LichUnqueue, and
    the rest sent when the turn ends, each ask with origin "chat"; the edit's diff shows only its
    changed lines in a closed fold that zR/zM open and close; :LichChat toggles and q closes the
    chat; LichGhostText has a terminal colour of its own and keeps a user's."""
    fake_provider.script(
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "hello.py",
                        "old_string": "def hello():\n    return 1\n",
                        "new_string": "def hello():\n    return 2\n",
                    },
                }
            ]
        },
        {"text": "Answer one."},
        {"text": "Answer two."},
    )
    write_provider_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "chat_daily", workspace, tmp_path)
    assert_passed(result)
    # The queued message reached the model only after the first turn's answer, with it.
    assert len(fake_provider.requests) == 3
    queued = _messages(fake_provider, 2)
    assert "second" in queued and "Answer one." in queued
    assert all("third" not in _messages(fake_provider, i) for i in range(3))
    assert all("fourth" not in _messages(fake_provider, i) for i in range(3))
    assert (workspace / "hello.py").read_text(encoding="utf-8") == "def hello():\n    return 2\n"
