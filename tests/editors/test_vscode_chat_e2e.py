"""The Lich chat view as a daily driver (issue #45) in a real VS Code (code-server 4.100.3) driven
by headless Chromium through editors/vscode/e2e/chat_daily.mjs, with a scripted model: Ctrl+Alt+C
opens the chat with the cursor in its input and the active file as a context chip; a long streamed
answer renders its markdown (table, nested list, quote, rule, highlighted code) and is followed
to its end; scrolled up, "Jump to latest" shows, and sending shows the new message; a code
block's Copy, Insert at cursor and Apply to file (a chat turn whose edit lands in the file); a slow
turn shows its seconds, a message sent meanwhile is queued and goes out after Escape stopped the
turn; the approval card shows the command in a code block with Allow always set apart; Rewind to
here asks first and then puts the file back; Tab reaches every control with a visible focus, and
New thread puts the cursor in the input.

Screenshots land in test-artifacts/ (the docs' ones in docs/editors with
LICH_UPDATE_DOCS_SCREENSHOTS=1). Install with .ci/vscode/install.sh and .ci/vscode/build.sh;
skips when they have not run, except under CI=true where that is a failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.editors.vscode_support import DOCS_SHOTS, require_vscode_install, run_driver

pytestmark = [pytest.mark.vscode, pytest.mark.slow]

# A cold code-server + Chromium start on a loaded 2-core machine, then seven steps.
DRIVER_TIMEOUT_S = 480
NEW_LINE = '    return f"Hello, {name}!"'
OLD_LINE = '    return "Hello, " + name'


@pytest.fixture(scope="module")
def chat() -> dict[str, Any]:
    require_vscode_install()
    return run_driver("chat_daily.mjs", DRIVER_TIMEOUT_S)


def _step(result: dict[str, Any], name: str) -> dict[str, Any]:
    step = result["steps"].get(name)
    assert step is not None, f"step {name} did not run: {sorted(result['steps'])}"
    assert step["ok"], f"{name} failed: {step.get('error')}\n{result['_stderr'][-4000:]}"
    return step


def test_keybinding_opens_the_chat_with_the_active_file_as_context(chat: dict[str, Any]) -> None:
    step = _step(chat, "keyboard_opens_chat")
    assert step["input_focused"] is True
    assert step["context_chip"] == "greet.py"


def test_markdown_renders_and_the_view_follows_then_shows_the_sent_message(
    chat: dict[str, Any],
) -> None:
    step = _step(chat, "markdown_and_scrolling")
    md = step["markdown"]
    assert md["table_headers"] == ["approach", "reads well"]
    assert md["italic"] == "joins"
    assert md["strike"] == "format()"
    assert md["quote"] == "Prefer f-strings for short formatting."
    assert md["rule"] is True
    assert md["nested"] == ["keep the name", "add the !"]
    assert md["keyword"] == "def"  # highlight.js
    assert md["code_white_space"] == "pre"  # code scrolls sideways, never wraps mid-word
    assert md["code_buttons"] == ["Copy", "Insert at cursor", "Apply to file"]
    # The streamed answer was followed to its end (it is taller than the view).
    assert step["after_stream"]["scrollable"] is True
    assert step["after_stream"]["from_bottom"] <= 2
    # Scrolled up to read: the view stays there and offers the way back.
    assert step["jump_shown"] is True
    assert step["scrolled_up"]["from_bottom"] > 200
    # Sending shows the new message, wherever the user had scrolled to.
    assert step["after_send"]["last_prompt_visible"] is True
    assert step["after_send"]["from_bottom"] <= 2
    assert step["jump_after_send"] is False


def test_code_block_copy_insert_and_apply(chat: dict[str, Any]) -> None:
    step = _step(chat, "code_blocks")
    assert step["clipboard"] == f"def greet(name):\n{NEW_LINE}"
    assert NEW_LINE in step["inserted"]
    # Apply to file went through the agent (a chat turn on greet.py), and its edit is in the editor.
    assert step["apply_prompt"].startswith("Apply this code to greet.py")
    assert step["apply_request_has_code"] is True
    assert NEW_LINE in step["editor_after_apply"]
    assert OLD_LINE not in step["editor_after_apply"]


def test_message_sent_while_a_turn_runs_is_queued_and_escape_stops_the_turn(
    chat: dict[str, Any],
) -> None:
    step = _step(chat, "queue_and_escape")
    assert step["progress"].startswith("Working… ") and step["progress"].endswith(" s")
    assert step["queued"] == ["Queued follow-up"]
    assert step["send_label"] == "Queue"
    # The slow turn waits 120 s in the model: it ended because Escape stopped it.
    assert step["slow_notices"] == ["Stopped: the turn was cancelled."]
    assert step["queued_answer"] == "Queued answer: here I am."
    assert step["queue_after"] == 0


def test_approval_card_shows_the_command_and_sets_allow_always_apart(chat: dict[str, Any]) -> None:
    step = _step(chat, "approval_card")
    assert step["question"] == "Run terminal?"
    assert step["command"] == "echo daily-approval"
    assert step["always_button"] == "Allow always"
    assert step["always_scope"] == "for every terminal call, in this workspace"
    assert step["always_below"] is True
    # The chat is on screen: no duplicate notification for the question.
    assert step["toast_while_asked"] is False
    assert step["toast_left"] is False
    assert step["answer"] == "I did not run it."


def test_rewind_asks_first_then_puts_the_file_back_without_internal_ids(
    chat: dict[str, Any],
) -> None:
    step = _step(chat, "rewind_confirmation")
    assert step["question"].startswith("Rewind to before “Apply this code to greet.py")
    assert step["confirm_focused"] is True
    # Cancel took nothing back.
    assert step["kept_after_cancel"] is True
    assert NEW_LINE in step["editor_after_cancel"]
    assert OLD_LINE in step["editor_after_rewind"]
    assert NEW_LINE not in step["editor_after_rewind"]
    assert step["notice"].startswith('Rewound to before "Apply this code to greet.py')
    assert "restored greet.py" in step["notice"]
    assert "thread" not in step["notice"]


def test_every_control_is_reached_with_tab_and_shows_its_focus(chat: dict[str, Any]) -> None:
    step = _step(chat, "keyboard_tab")
    for control in (
        "select.threads",
        "select.models",
        "button.new-thread",
        "button.rewind",
        "button.code-action.code-copy",
        "button.code-action.code-insert",
        "button.code-action.code-apply",
        "summary.",  # a tool call's line
        "button.drop-context",
        "textarea.input",
        "button.send",
    ):
        assert control in step["reached"], step["reached"]
    assert step["without_outline"] == []


def test_new_thread_puts_the_cursor_in_the_input(chat: dict[str, Any]) -> None:
    step = _step(chat, "new_thread_focuses_input")
    assert step["input_focused"] is True
    assert step["empty"] is True


def test_chat_screenshots_are_saved(chat: dict[str, Any]) -> None:
    _step(chat, "themes")
    shots = {Path(p).name: Path(p) for p in chat["screenshots"]}
    for name in (
        "vscode-chat-markdown.png",
        "vscode-chat-approval.png",
        "vscode-chat-dark.png",
        "vscode-chat-light.png",
    ):
        assert shots[name].parent == DOCS_SHOTS
        assert shots[name].stat().st_size > 20_000, f"{name} looks empty"
    assert chat["ok"] is True
