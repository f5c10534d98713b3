"""The packaged extension in a real VS Code (code-server 4.100.3 = VS Code 1.100.3) driven by
headless Chromium through editors/vscode/e2e/run.mjs: Ask Agent via the palette and input box
(the fake model reads and patches a file: the edit shows in the editor and, after
lich/saveDocuments, on disk), Apply Hashline Patch from the editor and from the clipboard, Cancel
Task on a slow task with the status bar showing it; Lich: Undo Task putting hello.py back (in
the editor and on disk); the server's "Ask agent…" code action
prompting through the client middleware; workspace trust of a `.lich/config.json` whose plugin
writes a marker file PWNED when imported (the server's question answered "Not now" keeps it off
even when Show Tools builds the tool runtime; "Lich: Trust Workspace Config" or the question's
"Trust" button loads it; "Lich: Revoke Workspace Config Trust" takes trust back); Lich: Run Tests
(Matching…) on a small pytest project: the failure in the Problems view, cleared after an unsaved
fix; the Lich chat view: Lich: Open Chat, a prompt, a follow-up that edits (its request carries
the first answer), Rewind to here; in review mode, an approval answered in the chat and a hunk
accepted from it; links in the chat's model text (issue #43): only workspace files open, links
out of the workspace or with another scheme open nothing and say so, and an edit's Open file opens
the file the server reported; ghost text from a fake fill-in-the-middle model accepted with Tab. Screenshots
land in test-artifacts/, the docs' ones (chat view light and dark, ghost text) too unless
LICH_UPDATE_DOCS_SCREENSHOTS=1 retakes them in docs/editors/.

Install with .ci/vscode/install.sh and .ci/vscode/build.sh. Skips when they have not run, except
under CI=true where that is a failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.editors.vscode_support import (
    DOCS_SHOTS,
    passed_scenario,
    require_vscode_install,
    run_driver,
)

pytestmark = [pytest.mark.vscode, pytest.mark.slow]

# Generous: a cold code-server + Chromium start on a loaded 2-core machine.
DRIVER_TIMEOUT_S = 420


@pytest.fixture(scope="module")
def e2e() -> dict[str, Any]:
    require_vscode_install()
    return run_driver("run.mjs", DRIVER_TIMEOUT_S)


def test_ask_agent_edits_the_editor_and_saves_to_disk(e2e: dict[str, Any]) -> None:
    ask = passed_scenario(e2e, "ask_agent")
    assert 'return f"Hello, {name}!"' in ask["editor_text"]
    assert (
        ask["disk_text"]
        == 'def greet(name):\n    return f"Hello, {name}!"\n\n\nprint(greet("world"))\n'
    )
    # Provider kind and model come from the server's lich.status, not the extension's settings.
    assert e2e["status_idle"] == "Lich: openai_compat/fake-model"
    assert ask["status_after"] == "Lich: openai_compat/fake-model"
    assert e2e["uses"] == "apply_patch", (
        "the scripted model fell back to edit_file: the hashline tools are missing"
    )


def test_apply_hashline_patch_from_editor_and_clipboard(e2e: dict[str, Any]) -> None:
    patch = passed_scenario(e2e, "apply_patch")
    assert patch["disk_text"] == "x = 1\ny = 42\nz = 3\n"
    assert patch["clipboard_disk_text"] == "x = 1\ny = 42\nz = 7\n"
    assert "Edited patch_me.py" in patch["notification"]


def test_code_action_without_prompt_asks_in_an_input_box(e2e: dict[str, Any]) -> None:
    action = passed_scenario(e2e, "code_action_prompt")
    assert action["code_action"].startswith("Ask agent")
    assert action["transcript_has_answer"] is True
    assert "task" not in action["status_after"]


def test_cancel_task_stops_a_slow_task_shown_in_the_status_bar(e2e: dict[str, Any]) -> None:
    cancel = passed_scenario(e2e, "cancel_task")
    assert cancel["status_while_running"].endswith("1 task")
    assert "task" not in cancel["status_after"]
    # The slow model turn waits 120 s: stopping well before proves the cancel.
    assert cancel["cancel_ms"] < 45_000


def test_undo_task_restores_the_file_in_the_editor_and_on_disk(e2e: dict[str, Any]) -> None:
    """Lich: Undo Task after the other first-folder scenarios: the pick lists the Ask Agent task
    (the only one that changed a file), and the server's inverse edit puts hello.py back."""
    undo = passed_scenario(e2e, "undo_task")
    assert undo["picked"]["rows"] == 1, undo["picked"]
    assert "Use an f-string in greet()" in undo["picked"]["text"]
    assert 'return "Hello, " + name' in undo["editor_text"]
    assert (
        undo["disk_text"]
        == 'def greet(name):\n    return "Hello, " + name\n\n\nprint(greet("world"))\n'
    )
    assert undo["message"].startswith(
        "lich: undo t1 (Use an f-string in greet()): restored hello.py"
    ), undo["message"]


TRUST_QUESTION = "lich: this workspace's .lich/config.json"


def test_untrusted_plugin_stays_off_when_the_trust_question_is_dismissed(
    e2e: dict[str, Any],
) -> None:
    not_now = passed_scenario(e2e, "trust_not_now")
    question = not_now["question"]
    assert question["message"].startswith(TRUST_QUESTION)
    assert "evil.py" in question["message"], "the question must say what the config would load"
    assert question["buttons"] == ["Trust", "Not now"]
    assert not_now["marker_before_answer"] is False
    # Show Tools answered, so the server built its tool runtime; the plugin still was not imported.
    assert not_now["tools_title"].startswith("Lich: ")
    assert not_now["marker_after_tools"] is False, "the untrusted plugin ran: PWNED was written"


def test_trust_workspace_config_command_loads_the_plugin_and_revoke_answers(
    e2e: dict[str, Any],
) -> None:
    command = passed_scenario(e2e, "trust_command")
    assert command["marker_before"] is False
    assert command["trusted_message"].startswith("lich: trusted "), command["trusted_message"]
    assert command["marker_after_trust"] is True
    assert command["revoked_message"].startswith("lich: revoked trust"), command["revoked_message"]


def test_trust_button_of_the_question_loads_the_plugin(e2e: dict[str, Any]) -> None:
    question = passed_scenario(e2e, "trust_question_trust")
    assert question["marker_before_answer"] is False
    assert question["trusted_message"].startswith("lich: trusted "), question["trusted_message"]
    assert question["marker_after_trust"] is True


def test_run_tests_warns_shows_problems_and_clears_them(e2e: dict[str, Any]) -> None:
    """Lich: Run Tests Matching… / Run Tests on a pytest project with a failing test: green for
    the filtered run, a warning with Show Problems whose Problems view lists the "lich tests"
    failure, and after an unsaved fix a green run that saved the file and cleared the problem."""
    run = passed_scenario(e2e, "run_tests")
    assert run["filtered_message"].startswith("Lich: tests passed: 1 passed")
    assert run["red_message"].startswith("Lich: tests failed: ")
    assert run["red_buttons"] == ["Show Problems"]
    assert "assert" in run["problems_text"]
    assert run["dirty_before_run"] is True
    assert "return a - b" in run["disk_before_run"].split("\n")[1]
    assert run["disk_after_run"].split("\n")[1] == "    return a + b"
    assert run["green_message"].startswith("Lich: tests passed: 2 passed")
    assert "lich tests" not in run["problems_after"]


def test_chat_view_answers_follows_up_with_the_history_and_rewinds_the_edit(
    e2e: dict[str, Any],
) -> None:
    """The Lich chat view (a webview in the side bar): Lich: Open Chat focuses its input, Enter
    sends, the answer shows in the view; the follow-up's request carries the first answer and its
    edit shows in the editor; Rewind to here on the follow-up takes the edit back."""
    chat = passed_scenario(e2e, "chat_view")
    assert chat["input_focused_by_open_chat"] is True
    first = chat["first_turns"]
    assert [t["prompt"] for t in first] == ["How does greet() build its text?"]
    assert first[0]["answer"] == "greet() joins the strings with +; an f-string would read better."
    second = chat["second_turns"]
    assert second[1]["prompt"] == "Use an f-string in greet()"
    assert second[1]["answer"] == "Done: greet() uses an f-string now."
    # Tool calls: name, target, outcome and duration on one collapsed line each.
    assert [t.split("greet.py")[0] for t in second[1]["tools"]] == ["read_file", "apply_patch"]
    assert all("greet.pyok" in t and t.endswith(" ms") for t in second[1]["tools"])
    assert chat["tool_details_open"] is True
    assert 'return f"Hello, {name}!"' in chat["editor_after_follow_up"]
    # The scripted model saw the first answer (and prompt) in the follow-up's request only.
    assert chat["first_request_has_answer"] is False
    assert chat["second_request_has_answer"] is True
    assert chat["second_request_has_first_prompt"] is True
    # Rewind to here on turn 2: the editor has the old line back, the turn shows as rewound.
    assert 'return "Hello, " + name' in chat["editor_after_rewind"]
    assert 'f"Hello' not in chat["editor_after_rewind"]
    assert [t["discarded"] for t in chat["turns_after_rewind"]] == [False, True]
    assert chat["turns_after_rewind"][1]["rewind"] is None
    assert "restored greet.py" in chat["rewind_notice"]
    assert chat["light_background"] != "rgb(0, 0, 0)"
    for shot in chat["screenshots"]:
        path = Path(shot)
        assert path.parent == DOCS_SHOTS
        assert path.stat().st_size > 20_000, f"{path} looks empty"


def test_chat_asks_approval_inline_and_accepts_a_review_hunk(e2e: dict[str, Any]) -> None:
    """Review mode, in the chat: the terminal call's approval shows in the turn (the chat is on
    screen, so not in a notification too); Allow once in the chat answers it; the patch is drawn as a diff
    under its call and waits as a hunk with Accept / Reject; Accept in the chat puts it in the
    editor."""
    review = passed_scenario(e2e, "chat_review")
    # Rendered from the server's `approval` event (not parsed out of the request's message).
    assert review["question"] == "Run terminal?"
    assert review["approval_command"] == "echo approved-in-chat"
    assert review["approval_cwd"].startswith("in /")
    # Allow always last, set apart (#45).
    assert review["buttons"] == ["Allow once", "Deny", "Allow always"]
    # The chat view is on screen: no duplicate toast for the question (#45).
    assert review["toast"] is False
    assert review["answered"] == "Answered: Allow once."
    assert review["toast_hidden_after_answer"] is True
    assert review["terminal_tool"].startswith("terminalecho approved-in-chatok")
    assert review["tool_diff"] == '@@ line 2 replaced by:\n+     return f"Hello, {name}!"\n'
    assert review["hunk_diff"] == (
        '-     return "Hello, " + name\n+     return f"Hello, {name}!"\n'
    )
    assert 'return "Hello, " + name' in review["editor_before_accept"]
    assert 'return f"Hello, {name}!"' in review["editor_after_accept"]
    assert review["hunk_after_accept"] == "Accepted"


LINK_REASONS = {
    "x": "it leads out of the workspace folder",
    "y": "it is outside the workspace folders",
    "z": 'links with the scheme "command:" are never opened from the chat',
    "deep": "it leads out of the workspace folder",
    "sibling": "it leads out of the workspace folder",
}
LINK_TARGETS = {
    "x": "../../etc/passwd",
    "y": "file:///etc/passwd",
    "z": "command:workbench.action.quit",
    "deep": "../" * 12 + "etc/passwd",
    "sibling": "../outside-secret.txt",
}
WRITTEN = "written by the agent, inside the workspace"


def _tab_labels(tabs: list[dict[str, Any]]) -> list[str]:
    return [tab["label"] for tab in tabs]


def test_chat_links_open_only_workspace_files_and_say_why_not(e2e: dict[str, Any]) -> None:
    """Links in the model's text, clicked in the chat: `../../etc/passwd`, `file:///etc/passwd`,
    `command:workbench.action.quit`, a deep `../…/etc/passwd` and `../outside-secret.txt` (a real
    file next to the folder) open no editor (the tabs stay as they were, the active editor is not
    /etc/passwd nor the outside file), the window stays, and each says why in a notification; the
    workspace-relative `docs/notes.md` opens that file."""
    links = passed_scenario(e2e, "chat_links")
    before = _tab_labels(links["tabs_before"])
    for label, reason in LINK_REASONS.items():
        clicked = links["refused"][label]
        assert clicked["link"] is True, f"{label}: the chat showed no link"
        assert clicked["message"] is not None, f"{label}: no notification said it was not opened"
        assert clicked["message"].startswith(
            f'Lich: the link "{LINK_TARGETS[label]}" in the chat was not opened: {reason}'
        ), clicked["message"]
        assert _tab_labels(clicked["tabs"]) == before, (
            f"{label} opened an editor: {clicked['tabs']}"
        )
        assert "root:" not in clicked["editor_text"]
        assert "outside the workspace" not in clicked["editor_text"]
    assert links["workbench_alive"] == 1
    assert "workspace notes" in links["notes_text"]


def test_chat_open_file_opens_the_file_the_server_reported(e2e: dict[str, Any]) -> None:
    """The model writes to the path `file:///etc/passwd`; the tool resolves it against the root,
    so the file written is <root>/file:/etc/passwd, which the server reports. The edit's Open file
    opens that file (not /etc/passwd), and the answer's own link to file:///etc/passwd is
    refused."""
    links = passed_scenario(e2e, "chat_links")
    assert links["disk_text"] == WRITTEN + "\n"
    assert links["diff_path"] == "file:///etc/passwd"  # what the model named, shown as such
    assert links["changed"] == "Changed: file:/etc/passwd"
    assert links["opened_tab"].get("label") == "passwd", links["opened_tab"]
    assert links["opened_tab"].get("active") is True
    assert WRITTEN in links["opened_text"]
    assert "root:" not in links["opened_text"]
    answer = links["answer_link"]
    assert answer["link"] is True
    assert answer["message"] == (
        'Lich: the link "file:///etc/passwd" in the chat was not opened: it is outside the workspace folders.'
    )
    assert "root:" not in answer["editor_text"]


def test_inline_completion_ghost_text_is_accepted_with_tab(e2e: dict[str, Any]) -> None:
    """A folder whose lich.completions.model is a fake FIM server: typing `    return ` in a
    Python file shows the model's `a + b` as ghost text (the client declared inline completions,
    so the server answered textDocument/inlineCompletion), Tab puts it in the buffer, saving
    puts it on disk; the FIM request carried the text before the cursor, the path and a suffix."""
    fim = passed_scenario(e2e, "inline_completion")
    assert "a + b" in fim["ghost"]
    assert Path(fim["screenshot"]) == DOCS_SHOTS / "vscode-completion.png"
    assert "    return a + b" in fim["editor_after_tab"]
    assert fim["disk_text"].splitlines() == ["def add(a, b):", "    return a + b"]
    assert fim["asked_prompt_tail"].endswith("def add(a, b):\n    return ")
    assert fim["asked_prompt_has_path"] is True
    assert fim["asked_suffix"] == ""
    assert fim["asked_stream"] is True
    # Debounced: typing 11 characters did not ask once per keystroke.
    assert 1 <= fim["fim_requests"] <= 6, fim["fim_requests"]


def test_screenshots_are_saved(e2e: dict[str, Any]) -> None:
    shots = [Path(p) for p in e2e["screenshots"]]
    names = {p.name for p in shots}
    assert {
        "vscode-ask-agent.png",
        "vscode-task-running.png",
        "vscode-final.png",
        "vscode-trust-question.png",
        "vscode-chat-dark.png",
        "vscode-chat-light.png",
    } <= names
    for shot in shots:
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
    assert e2e["ok"] is True
