"""Commands without a model, code actions, bad command arguments and config, in-process.

Each test runs an EditorSession in this process against the FakeEditor (the `editor` fixture):
lich.read of an unsaved buffer, the argument checks of every command and their error texts,
lich.runTool and lich.tools, code actions for diagnostics, a bad config value dropped alone and
named once, pushed settings and the workspace config file. What only the protocol
layer does (malformed params, unknown commands, traceback-free error responses) stays on the
wire in test_lsp_basics.py. One client profile, except where the profiles change what is tested
(code actions: CodeAction literals or plain Commands follow the client's capabilities).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsp_harness import WAIT_S, bounded, provider_options
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lich_core.hashline.anchors import line_hash


def _errors(fake: Any) -> list[str]:
    return [text for kind, text in fake.messages if kind == types.MessageType.Error]


async def test_read_returns_anchored_rows_of_the_unsaved_buffer(editor, root: Path) -> None:
    (root / "a.py").write_text("on disk\n", encoding="utf-8")
    fake = await editor("visual-studio-code")
    uri = fake.open(root / "a.py", "unsaved\nsecond line\n")
    result = await fake.command("lich.read", {"uri": uri})
    assert result["rows"].splitlines() == [
        f"1:{line_hash('unsaved')}|unsaved",
        f"2:{line_hash('second line')}|second line",
    ]
    assert result["version"] == 1
    assert result["total_lines"] == 2
    ranged = await fake.command("lich.read", {"uri": uri, "start": 2, "end": 2})
    assert ranged["rows"] == f"2:{line_hash('second line')}|second line"


# The session's own argument checks. Arguments that are not a list, and commands pygls does not
# know, are refused by the protocol layer: test_lsp_basics.py sends those over the wire.
BAD_ARGUMENTS = [
    ("lich.read", [{}], "missing required field 'uri'"),
    ("lich.read", [{"uri": 5}], "field 'uri' must be a string"),
    ("lich.read", ["file:///x"], "expected an object argument"),
    ("lich.read", [{"uri": "file:///elsewhere/x.py"}], "outside the workspace root"),
    ("lich.read", [{"uri": "URI", "start": 0}], "line number >= 1"),
    ("lich.applyPatch", [{}], "missing required field 'patch'"),
    ("lich.applyPatch", [{"patch": 3}], "field 'patch' must be a string"),
    ("lich.runTool", [{"name": "read_file", "args": [1]}], "field 'args' must be an object"),
    ("lich.runTool", [{"args": {}}], "missing required field 'name'"),
    ("lich.ask", [{"prompt": 1}], "field 'prompt' must be a string"),
    ("lich.ask", [{"prompt": "x", "mode": "yolo"}], "field 'mode' must be one of apply, review"),
    ("lich.ask", [{"prompt": "x", "uri": "URI", "range": {"start": 1}}], "must be an LSP range"),
    (
        "lich.ask",
        [
            {
                "prompt": "x",
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            }
        ],
        "needs 'uri'",
    ),
    ("lich.cancel", [{"task_id": 7}], "field 'task_id' must be a string"),
    ("lich.status", [{}, {}], "expected one object argument, got 2"),
]


async def test_bad_arguments_are_clear_json_rpc_errors(editor, root: Path) -> None:
    fake = await editor("visual-studio-code")
    uri = fake.open(root / "x.py", "x\n")
    for command, arguments, message in BAD_ARGUMENTS:
        arguments = [
            {k: (uri if v == "URI" else v) for k, v in a.items()} if isinstance(a, dict) else a
            for a in arguments
        ]
        with pytest.raises(JsonRpcException) as caught:
            # The arguments list as the editor sent it (FakeEditor.command sends exactly one).
            await bounded(
                fake.session.execute_command(command, arguments), WAIT_S, f"the answer to {command}"
            )
        assert caught.value.code == -32602, command
        assert message in caught.value.message
        assert command in caught.value.message
        assert "Traceback" not in caught.value.message and not caught.value.data
    # The session is still fine afterwards, and nothing was shown to the user as a crash.
    status = await fake.command("lich.status", {})
    assert status["open_documents"] == 1
    assert _errors(fake) == []


async def test_run_tool_without_a_model(editor, root: Path) -> None:
    fake = await editor("visual-studio-code")
    (root / "notes.txt").write_text("hello\n", encoding="utf-8")
    result = await fake.command("lich.runTool", {"name": "list_dir", "args": {"path": "."}})
    assert result["ok"] is True and "notes.txt" in result["output"]
    unknown = await fake.command("lich.runTool", {"name": "no_such_tool", "args": {}})
    assert unknown["ok"] is False and unknown["error"].startswith("unknown_tool:")
    tools = await fake.command("lich.tools", {})
    by_name = {tool["name"]: tool for tool in tools["tools"]}
    assert by_name["terminal"]["capability"] == "process/exec"
    assert by_name["terminal"]["approval"] == "ask"
    assert by_name["edit_file"]["approval"] == "allow"
    assert all(
        {"name", "description", "parameters", "capability", "enabled"} <= set(t)
        for t in tools["tools"]
    )


def diagnostic(line: int, message: str, source: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line, character=3)
        ),
        message=message,
        source=source,
        severity=types.DiagnosticSeverity.Error,
    )


# Every profile: whether actions come as CodeAction literals follows the client's capabilities.
async def test_code_actions_for_diagnostics(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    options = provider_options(
        fake_provider,
        code_actions=[
            {"title": "Add docstrings", "prompt": "Add docstrings", "kind": "refactor.rewrite.lich"}
        ],
    )
    fake = await editor(client_name, init_options=options)
    uri = fake.open(root / "d.py", "imp os\nx = y\n")
    diagnostics = [
        diagnostic(0, "invalid syntax", "python"),
        diagnostic(1, "undefined name 'y'\nmore", "pyflakes"),
    ]
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=1, character=0)
        ),
        context=types.CodeActionContext(diagnostics=diagnostics),
    )
    actions = fake.code_action(params)
    assert all(isinstance(a, types.CodeAction) for a in actions)
    if fake.declared.window and fake.declared.window.show_message is not None:
        asking = [("Ask agent…", "refactor.rewrite.lich")]
    else:
        # lich.ask without a prompt cannot get one here: the quick prompts are the actions instead.
        asking = [
            ("Ask agent: Explain this code", "refactor.rewrite.lich"),
            ("Ask agent: Find bugs in this code", "refactor.rewrite.lich"),
            ("Ask agent: Add tests for this code", "refactor.rewrite.lich"),
        ]
    assert [(a.title, a.kind) for a in actions] == [
        *asking,
        ("Fix with agent: invalid syntax", "quickfix.lich"),
        ("Fix with agent: undefined name 'y'", "quickfix.lich"),
        ("Add docstrings", "refactor.rewrite.lich"),
    ]
    fix = actions[len(asking) + 1]
    assert fix.command.command == "lich.ask"
    (argument,) = fix.command.arguments
    assert argument["uri"] == uri and "undefined name 'y'" in argument["prompt"]
    assert fix.diagnostics[0].message.startswith("undefined name")
    params.context.only = [types.CodeActionKind.QuickFix]
    only_fixes = fake.code_action(params)
    assert [a.kind for a in only_fixes] == ["quickfix.lich", "quickfix.lich"]
    # Listing actions is static: the configured model was never called.
    assert fake_provider.requests == []


def _warnings(fake: Any) -> list[str]:
    return [text for kind, text in fake.messages if kind == types.MessageType.Warning]


async def test_a_bad_setting_is_dropped_alone_named_once_and_listed_in_status(
    editor, root: Path
) -> None:
    fake = await editor("visual-studio-code", init_options={"edit_mode": "review"})
    # VS Code sends didChangeConfiguration with null settings: the server pulls section "lich".
    await fake.change_settings({"edit_mode": "sideways", "disk_write_policy": "editor"})
    await fake.wait_for_message("edit_mode")
    (warning,) = _warnings(fake)
    assert "edit_mode: expected one of apply, review, got 'sideways'" in warning
    assert _errors(fake) == []
    status = await fake.command("lich.status", {})
    assert status["disk_write_policy"] == "editor"  # the rest of the editor's settings applies
    # The editor's value replaced initializationOptions' and was dropped: nothing sets it now.
    assert status["edit_mode"] == "apply"
    (problem,) = status["config"]["problems"]
    assert problem["key"] == "edit_mode" and problem["source"] == "the editor's settings"
    assert status["config_error"] is None and status["config"]["broken_files"] == []
    # The same settings again: the problem is still in the status, not shown a second time.
    await fake.change_settings({"edit_mode": "sideways", "disk_write_policy": "editor"})
    assert len(_warnings(fake)) == 1
    await fake.change_settings({"edit_mode": "review"})
    status = await fake.command("lich.status", {})
    assert status["edit_mode"] == "review"
    assert status["config"]["problems"] == [] and status["config_error"] is None


async def test_pushed_settings_and_workspace_file(editor, root: Path) -> None:
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text('{"disk_write_policy": "editor"}', encoding="utf-8")
    fake = await editor("neovim@v0.7.0")
    status = await fake.command("lich.status", {})
    assert status["disk_write_policy"] == "editor"
    await fake.change_settings({"lich": {"edit_mode": "review"}}, push=True)
    status = await fake.command("lich.status", {})
    assert status["edit_mode"] == "review"
