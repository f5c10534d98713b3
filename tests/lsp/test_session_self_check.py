"""The agent checks its own work, in the editor: a task (scripted provider over real HTTP) runs the
tests, sees red (the failure is a diagnostic in the editor), fixes the code, sees green (the
diagnostic clears) and commits exactly the file it edited, through the gatekeeper's git_commit.
The repository is real git in a temp dir; the tests are real pytest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lsp_harness import edit, provider_options, tool_messages, uri_of
from test_session_run_tests import FAILING_LINE, FIXED_ADD, make_project

from lich_lsp.run_tests import TEST_DIAGNOSTIC_SOURCE


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def make_repo(root: Path) -> Path:
    test_file = make_project(root)
    (root / "notes.txt").write_text("draft\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "add", "-A")
    git(
        root,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-q",
        "-m",
        "start",
    )
    (root / "notes.txt").write_text("draft, edited by the user, not for this commit\n")
    return test_file


@pytest.fixture
def self_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LICH_ALLOW_SELF_COMMIT", "1")


async def test_red_fix_green_commit(editor, root: Path, fake_provider, self_commit) -> None:
    test_file = make_repo(root)
    uri = uri_of(test_file)
    run_tests = {"name": "run_tests", "arguments": {}}
    fake_provider.script(
        {"tool_calls": [run_tests]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        # The fixed text of the run_tests tests (not the broken text's size: see FIXED_ADD).
        {"tool_calls": [edit("calc.py", "a - b\n", "a + b  # fixed\n")]},
        {"tool_calls": [run_tests]},
        {
            "tool_calls": [
                {"name": "git_commit", "arguments": {"message": "Fix add", "paths": ["calc.py"]}}
            ]
        },
        {"text": "Fixed add and committed it."},
    )
    options = provider_options(fake_provider, approval={"process/exec": "allow"})
    # The fix goes to the editor as an edit (then saved through lich/saveDocuments).
    fake = await editor("visual-studio-code", init_options=options, save_documents=True)
    seen_red: list[int] = []

    def watch() -> None:
        # The red run's diagnostic is in the editor while the task goes on.
        if any(d.source == TEST_DIAGNOSTIC_SOURCE for d in fake.diagnostics.get(uri, [])):
            seen_red.append(fake.diagnostics[uri][0].range.start.line)

    fake.before_apply = watch  # called when the fix arrives as an edit
    result = await fake.command("lich.ask", {"prompt": "make the tests pass and commit the fix"})
    assert result["stopped_reason"] == "final", tool_messages(fake_provider)
    red, _read, edited, green, committed = tool_messages(fake_provider)
    assert json.loads(red)["error"].startswith("tests_failed:")
    assert "Edited calc.py" in edited or "calc.py" in edited
    assert green.startswith("Tests passed: 0 failed, 2 passed")
    assert "calc.py" in committed
    assert seen_red == [FAILING_LINE - 1]
    assert fake.diagnostics[uri] == []  # the green run cleared it
    # Exactly the edited file was committed, by lich, and the user's own change stays theirs.
    assert git(root, "log", "-1", "--format=%an <%ae>|%s") == "lich <lich@localhost>|Fix add\n"
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["calc.py"]
    assert git(root, "status", "--porcelain").split("\n")[0].endswith("notes.txt")
    assert (root / "calc.py").read_text() == FIXED_ADD
