"""The extension's editor side (issue #45) in a real VS Code (code-server 4.100.3) driven by
headless Chromium through editors/vscode/e2e/editor.mjs, as a person uses it:

- with no model set up (no provider in the settings, no key in the environment, an empty user
  config dir) the status item says "Lich: no model" and the Lich side bar shows the "Get Started"
  view; its Try the Demo plays `lich demo` in a terminal; its Set Up a Model (kind, URL, model, key
  variable) writes the user config file the server reads, after which the status item names the
  model and the view goes;
- a task from the "Ask agent…" code action ends in ONE notification with "Open chat" (the server
  sends none: the extension declared taskNotifications), which opens that task's thread in the
  chat; a turn sent from the chat ends with no notification;
- review mode: the pending hunk's old line is struck through and its proposed line drawn after it
  in the editor (read from the DOM), under the Accept | Reject CodeLens; Accept puts the new line
  in the editor and the marks go;
- ghost text from a completion model nobody serves: the ghost-text status item says it is
  failing and its tooltip says when and why.

Install with .ci/vscode/install.sh and .ci/vscode/build.sh; skips without them, except under
CI=true where that is a failure.
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

# A cold code-server + Chromium start on a loaded 2-core machine, four folders, the demo.
DRIVER_TIMEOUT_S = 600
FAKE_KEY_ENV = "LICH_E2E_FAKE_KEY"
NOTIFY_ANSWER = "Explained: greet() builds a greeting with +."
CHAT_ANSWER = "Chat answer: yes, that is all it does."
OLD_LINE = '    return "Hello, " + name'
NEW_LINE = '    return f"Hello, {name}!"'


@pytest.fixture(scope="module")
def e2e() -> dict[str, Any]:
    require_vscode_install()
    return run_driver("editor.mjs", DRIVER_TIMEOUT_S)


def test_no_model_shows_the_welcome_view_and_the_status_says_no_model(
    e2e: dict[str, Any],
) -> None:
    welcome = passed_scenario(e2e, "welcome")
    assert welcome["status_before"] == "Lich: no model"
    assert welcome["view"]["title"] == "Get Started"
    assert welcome["view"]["text"].startswith("No model is set up")
    assert welcome["view"]["buttons"] == ["Set Up a Model", "Try the Demo", "Read the Docs"]


def test_try_the_demo_plays_lich_demo_in_a_terminal(e2e: dict[str, Any]) -> None:
    welcome = passed_scenario(e2e, "welcome")
    assert "Lich demo" in welcome["terminal"]["names"]
    assert "-m lich_cli demo" in welcome["terminal"]["rows"]
    # The recorded conversation ran to its end: its summary and next steps are in the terminal.
    assert "lich demo: " in welcome["demo_text"]
    assert "a real provider" in welcome["demo_text"]


def test_read_the_docs_opens_the_readme_preview(e2e: dict[str, Any]) -> None:
    welcome = passed_scenario(e2e, "welcome")
    assert "README" in welcome["docs_tab"]


def test_set_up_a_model_writes_the_user_config_and_the_status_names_it(
    e2e: dict[str, Any],
) -> None:
    welcome = passed_scenario(e2e, "welcome")
    [provider] = welcome["config"]["providers"]
    assert provider["kind"] == "openai_compat"
    assert provider["model"] == "fake-model"
    assert provider["api_key_env"] == FAKE_KEY_ENV
    assert provider["base_url"].startswith("http://127.0.0.1:")
    # The server read the new file: lich.status names its provider, configured by the user.
    assert welcome["status_after"] == "Lich: openai_compat/fake-model"
    assert welcome["saved"]["message"].startswith("Lich: OpenAI-compatible fake-model at http://")
    assert welcome["saved"]["message"].endswith("/home/.config/lich/config.json.")
    assert welcome["view_gone"] is True


def test_a_code_action_task_ends_in_one_notification_that_opens_its_chat(
    e2e: dict[str, Any],
) -> None:
    notify = passed_scenario(e2e, "notify")
    assert notify["notice"] == {
        "message": f"Lich: Explain this line: {NOTIFY_ANSWER}",
        "buttons": ["Open chat"],
    }
    # Exactly one: none from the server (taskNotifications), the answer's first line only.
    assert notify["after_task"] == [notify["notice"]]
    [turn] = notify["opened_turns"]
    assert turn["prompt"] == "Explain this line"
    assert turn["answer"].startswith(NOTIFY_ANSWER)


def test_a_chat_turn_ends_without_a_notification(e2e: dict[str, Any]) -> None:
    notify = passed_scenario(e2e, "notify")
    assert [t["prompt"] for t in notify["chat_turns"]] == ["Explain this line", "Is that all?"]
    assert notify["chat_turns"][1]["answer"] == CHAT_ANSWER
    # Only the later palette command's message: nothing for the chat turn before it.
    assert [n["message"] for n in notify["after_chat"]] == ["Lich: no task is running."]


def test_review_mode_draws_the_proposed_line_in_the_editor_and_accept_applies_it(
    e2e: dict[str, Any],
) -> None:
    review = passed_scenario(e2e, "review")
    shown = review["shown"]
    assert shown["lines"][1] == OLD_LINE  # the file still has the old line...
    assert shown["struck"] == [OLD_LINE]  # ...marked deleted...
    assert shown["after"] == ["→ " + NEW_LINE]  # ...with the proposed line after it
    assert shown["lenses"] == ["Accept", "Reject"]
    assert OLD_LINE in review["disk_before"]
    accepted = review["accepted"]
    assert accepted["lines"][1] == NEW_LINE
    assert accepted["struck"] == [] and accepted["after"] == [] and accepted["lenses"] == []


def test_failing_ghost_text_shows_in_its_status_item(e2e: dict[str, Any]) -> None:
    ghost = passed_scenario(e2e, "ghost_status")
    assert ghost["before"]["text"] == "Ghost text"
    assert ghost["failing"]["text"] == "Ghost text: failing"
    assert " failed at " in ghost["tooltip"]
    # In plain words (lich.status completion.last_error), not the provider's config names.
    assert "Could not reach the model server at http://127.0.0.1:" in ghost["tooltip"]
    assert "provider '" not in ghost["tooltip"] and "base_url" not in ghost["tooltip"]
    assert Path(ghost["screenshot"]) == DOCS_SHOTS / "vscode-completion-status.png"
    assert Path(ghost["screenshot"]).stat().st_size > 10_000
