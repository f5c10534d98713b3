"""lich.runTests in-process: failing tests become diagnostics on the failing line, a green run
clears them, and tests see what the editor shows (buffers saved first, or the run refused).

A real pytest project in the workspace, run by the real run_tests tool (the server's Python,
which has pytest), against the FakeEditor under each client profile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsp_harness import uri_of
from lsprotocol import types

from lich_lsp.run_tests import TEST_DIAGNOSTIC_SOURCE

BROKEN_ADD = "def add(a, b):\n    return a - b\n"
# Not the broken text's size: a test rewrites calc.py within a second of importing it, and an
# interpreter that writes bytecode would keep a .pyc whose mtime and size still match.
FIXED_ADD = "def add(a, b):\n    return a + b  # fixed\n"
TEST_FILE = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
FAILING_LINE = 5  # 1-based: the assert of test_add


def make_project(root: Path, calc: str = BROKEN_ADD) -> Path:
    (root / "conftest.py").write_text("")  # rootdir conftest: the root is importable
    (root / "calc.py").write_text(calc)
    (root / "tests").mkdir(exist_ok=True)
    test_file = root / "tests" / "test_calc.py"
    test_file.write_text(TEST_FILE)
    return test_file


def lich_diagnostics(fake, uri: str) -> list[types.Diagnostic]:
    return [d for d in fake.diagnostics.get(uri, []) if d.source == TEST_DIAGNOSTIC_SOURCE]


async def test_a_failing_test_is_a_diagnostic_on_its_line_until_a_green_run(
    editor, root: Path, client_name: str
) -> None:
    test_file = make_project(root)
    fake = await editor(client_name)
    red = await fake.command("lich.runTests", {})
    assert red["ok"] is False and red["error"].startswith("tests_failed:")
    assert (red["passed"], red["failed"]) == (1, 1)
    uri = uri_of(test_file)
    (failure,) = red["failures"]
    assert failure["test_id"].endswith("test_calc.py::test_add")
    assert (failure["uri"], failure["line"]) == (uri, FAILING_LINE - 1)
    assert "assert" in failure["message"]
    (diagnostic,) = lich_diagnostics(fake, uri)
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.range.start.line == FAILING_LINE - 1 and diagnostic.range.start.character == 0
    assert diagnostic.range.end.line == FAILING_LINE - 1
    assert diagnostic.range.end.character == len(
        "    assert add(1, 2) == 3"
    )  # ASCII: the same in every encoding
    assert "test_add" in diagnostic.message

    (root / "calc.py").write_text(FIXED_ADD)
    green = await fake.command("lich.runTests", {})
    assert green["ok"] is True and green["failures"] == [] and "error" not in green, green
    assert green["passed"] == 2 and "2 passed" in green["summary"]
    assert fake.diagnostics[uri] == []  # cleared


async def test_a_filter_runs_only_the_matching_tests(editor, root: Path) -> None:
    make_project(root)
    fake = await editor()
    only_zero = await fake.command("lich.runTests", {"filter": "test_zero"})
    assert only_zero["ok"] is True and only_zero["passed"] == 1 and only_zero["failed"] == 0


async def test_unsaved_buffers_are_saved_first_when_the_editor_can(editor, root: Path) -> None:
    """Tests see what the user sees: the fix typed in the editor (not saved) makes them green."""
    test_file = make_project(root)
    fake = await editor("visual-studio-code", save_documents=True)
    calc = fake.open(root / "calc.py")
    fake.type_text(calc, FIXED_ADD)
    result = await fake.command("lich.runTests", {})
    assert result["ok"] is True, result
    assert (root / "calc.py").read_text() == FIXED_ADD  # the editor saved it, asked by the server
    assert lich_diagnostics(fake, uri_of(test_file)) == []


async def test_unsaved_buffers_are_named_when_the_editor_cannot_save(editor, root: Path) -> None:
    test_file = make_project(root)
    fake = await editor("neovim@v0.7.0")  # no experimental.lich.saveDocuments
    calc = fake.open(root / "calc.py")
    fake.type_text(calc, FIXED_ADD)
    result = await fake.command("lich.runTests", {})
    assert result["ok"] is False and result["error"].startswith("unsaved_buffers:")
    assert "calc.py" in result["error"]
    assert (root / "calc.py").read_text() == BROKEN_ADD  # nothing written behind the user's back
    assert lich_diagnostics(fake, uri_of(test_file)) == []  # nothing ran


async def test_the_users_command_is_the_approval(editor, root: Path) -> None:
    make_project(root, FIXED_ADD)
    fake = await editor()
    result = await fake.command("lich.runTests", {})
    # process/exec is "ask" by default: asking for the run was the answer, no question follows.
    assert result["ok"] is True and fake.message_requests == []


async def test_a_deny_policy_still_refuses(editor, root: Path) -> None:
    make_project(root, FIXED_ADD)
    fake = await editor(init_options={"approval": {"run_tests": "deny"}})
    denied = await fake.command("lich.runTests", {})
    assert denied["ok"] is False and denied["error"].startswith("approval_denied:")
    assert fake.diagnostics == {}


async def test_no_test_command_is_a_clear_error(editor, root: Path) -> None:
    (root / "notes.txt").write_text("not a project\n")
    fake = await editor()
    result = await fake.command("lich.runTests", {})
    assert result["ok"] is False and result["error"].startswith("no_test_command:")
    assert result["failures"] == [] and fake.diagnostics == {}


async def test_the_run_shows_work_done_progress(editor, root: Path) -> None:
    make_project(root, FIXED_ADD)
    fake = await editor()
    await fake.command("lich.runTests", {})
    kinds = [type(value).__name__ for _, value in fake.progress_reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert "passed" in (fake.progress_reports[-1][1].message or "")
    assert fake.progress_tokens == set()


@pytest.mark.parametrize("argument", [{"filter": 3}, "test_add"])
async def test_bad_arguments_are_invalid_params(editor, root: Path, argument) -> None:
    from pygls.exceptions import JsonRpcException

    fake = await editor()
    with pytest.raises(JsonRpcException) as caught:
        await fake.command("lich.runTests", argument)
    assert "lich.runTests" in str(caught.value)


async def test_fix_with_agent_is_offered_on_a_failing_test(
    editor, root: Path, fake_provider
) -> None:
    from lsp_harness import provider_options

    test_file = make_project(root)
    fake = await editor("visual-studio-code", init_options=provider_options(fake_provider))
    await fake.command("lich.runTests", {})
    uri = fake.open(test_file)
    (diagnostic,) = lich_diagnostics(fake, uri)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic]),
    )
    fixes = [a for a in fake.code_action(params) if a.kind == "quickfix.lich"]
    assert len(fixes) == 1 and fixes[0].title.startswith("Fix with agent: ")
    (argument,) = fixes[0].command.arguments
    assert argument["uri"] == uri and "test_add" in argument["prompt"]


async def test_an_untrusted_workspace_test_command_never_runs(editor, root: Path) -> None:
    """test_command runs a program: from the repository's own .lich/config.json it counts only
    once the user trusts that file."""
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text('{"test_command": "touch PWNED"}')
    fake = await editor()
    result = await fake.command("lich.runTests", {})
    assert result["ok"] is False and result["error"].startswith("no_test_command:")
    assert not (root / "PWNED").exists()
    status = await fake.command("lich.status", {})
    assert "test_command" in json.dumps(status["trust"])


async def test_git_commit_is_not_a_command(
    editor, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gatekeeper's checks need a task's history: lich.runTool refuses git_commit outright."""
    monkeypatch.setenv("LICH_ALLOW_SELF_COMMIT", "1")
    fake = await editor()
    result = await fake.command(
        "lich.runTool", {"name": "git_commit", "args": {"message": "x", "paths": ["a.py"]}}
    )
    assert result["ok"] is False and result["error"].startswith("agent_only: git_commit")
