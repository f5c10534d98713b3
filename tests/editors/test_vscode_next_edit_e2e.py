"""Next edit suggestions in a real VS Code (code-server 4.100.3 = VS Code 1.100.3) driven by
headless Chromium through editors/vscode/e2e/next_edit.mjs (issue #47), against the real lich-lsp
server whose next-edit model is the fake Zeta model (tests/support/fake_zeta.py: it renames
`count` to `total` in the editable region it is sent).

The user selects `count` at its definition and types `total`: the two uses below are drawn as
inline diffs at their place (the old name struck through, `total` after it, a gutter marker);
Tab puts the cursor on the first, Tab again accepts it; the second follows the same way. A new
use typed at the end is suggested too and Escape dismisses it; `x = tot` gets `al` as ghost text
after the cursor and Tab accepts it; the saved file has what the editor shows. Install with .ci/vscode/install.sh and .ci/vscode/build.sh; skips without them, except
under CI=true.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.editors.vscode_support import require_vscode_install, run_driver

pytestmark = [pytest.mark.vscode, pytest.mark.slow]

# As long as run.mjs gets (tests/editors/test_vscode_e2e.py): a cold start on a loaded machine.
DRIVER_TIMEOUT_S = 420
RENAMED = "def summary(items):\n    total = 0\n    for item in items:\n        total += item\n    return total\n"


@pytest.fixture(scope="module")
def e2e() -> dict[str, Any]:
    require_vscode_install()
    # The driver takes no docs' screenshots: no LICH_DOCS_DIR.
    result = run_driver("next_edit.mjs", DRIVER_TIMEOUT_S, docs_dir=None)
    assert result["ok"], result["_stderr"][-4000:]
    return result


def _suggested(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The drawn lines that show a suggestion, by their text."""
    return {
        line["text"]: line for line in lines if line["marker"] or line["struck"] or line["after"]
    }


def test_a_rename_suggests_the_uses_away_from_the_cursor_as_inline_diffs(
    e2e: dict[str, Any],
) -> None:
    shown = e2e["steps"]["shown"]
    suggested = _suggested(shown["lines"])
    assert set(suggested) == {"        count += item", "    return count"}
    for line in suggested.values():
        assert line == {
            **line,
            "struck": ["count"],
            "after": ["total"],
            "marker": True,
            "ghost": False,
        }
    # The cursor stayed where the user typed (line 2, after `total`); nothing was changed yet.
    assert shown["cursor"] == [2, 10]


def test_tab_jumps_then_accepts_each_suggestion(e2e: dict[str, Any]) -> None:
    steps = e2e["steps"]
    assert steps["jumped"]["cursor"][0] == 4
    assert "        count += item" in steps["jumped"]["text"]  # the jump changed nothing
    assert "        total += item" in steps["accepted_first"]["text"]
    assert "    return count" in steps["accepted_first"]["text"]
    second = _suggested(steps["second_shown"]["lines"])
    assert list(second) == ["    return count"]
    assert e2e["renamed"].rstrip("\n") == RENAMED.rstrip("\n")


def test_escape_dismisses_and_the_file_saves_what_the_editor_shows(e2e: dict[str, Any]) -> None:
    steps = e2e["steps"]
    assert list(_suggested(steps["new_use_shown"]["lines"])) == ["print(count)"]
    assert _suggested(steps["dismissed"]["lines"]) == {}
    # `x = total` went in as line 2, indented by VS Code after the `def` line.
    assert e2e["disk_text"] == RENAMED.replace("\n", "\n    x = total\n", 1) + "print(count)"


def test_a_suggestion_at_the_cursor_is_ghost_text_and_tab_accepts_it(e2e: dict[str, Any]) -> None:
    """`x = tot`: the model completes the name; the suggestion inserts `al` right at the cursor,
    so it is drawn after the cursor without a gutter marker or struck text."""
    ghost = _suggested(e2e["steps"]["ghost_shown"]["lines"])["    x = tot"]
    assert ghost == {
        "text": "    x = tot",
        "after": ["al"],
        "struck": [],
        "marker": False,
        "ghost": True,
    }
    assert e2e["steps"]["ghost_shown"]["cursor"] == [2, 12]
    assert "x = total" in e2e["steps"]["ghost_accepted"]["text"]


def test_the_model_was_asked_with_the_users_rename_in_the_region(e2e: dict[str, Any]) -> None:
    prompts = [str(request.get("prompt", "")) for request in e2e["requests"]]
    assert any("total<|user_cursor_is_here|> = 0" in prompt for prompt in prompts), prompts
    assert all(request.get("model") == "zeta" for request in e2e["requests"])
