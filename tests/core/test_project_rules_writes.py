"""Writes to project rules files (issue #43): lich_core.approvals finds them in a call's
arguments (every spelling of the path, each write tool, apply_patch's sections and the repair
preview accept_repair applies) and asks whatever the tool's policy but "deny"; the question's key
is that tool and those files; the trust store notes them, and the refusal that follows says what
they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lich_core.approvals import (
    CliApprovalCheck,
    call_approval_key,
    call_policy,
    project_rules_written,
    what_will_run,
)
from lich_core.hashline.read_state import ReadState
from lich_core.project_rules import FOLDER_RULE_NAMES, ROOT_ONLY_RULE_NAMES, is_project_rules_file
from lich_core.tools.builtin import builtin_tools
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.trust import TrustStore, agent_writes_refusal
from lich_core.vocabulary import ToolResult

TOOLS = {tool.name: tool for tool in builtin_tools()}


def ctx(root: Path) -> ToolContext:
    return ToolContext(work_dir=root, read_state=ReadState())


def written(root: Path, name: str, context: ToolContext | None = None, **args: Any) -> list[str]:
    return project_rules_written(TOOLS[name], args, context or ctx(root))


def test_the_names_are_project_rules_own(tmp_path: Path) -> None:
    for name in FOLDER_RULE_NAMES:
        assert is_project_rules_file(name) and is_project_rules_file(f"a/b/{name}")
        assert is_project_rules_file(name.lower())  # a case-insensitive file system's spelling
    for name in ROOT_ONLY_RULE_NAMES:
        assert is_project_rules_file(name)
    assert not is_project_rules_file("docs/AGENTS.md.bak")
    assert not is_project_rules_file("pkg/.github/copilot-instructions.md")


def test_each_write_tool_and_spelling_is_found(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    assert written(root, "write_file", path="AGENTS.md", content="x") == ["AGENTS.md"]
    assert written(root, "write_file", path="./pkg/../CLAUDE.md", content="x") == ["CLAUDE.md"]
    assert written(root, "write_file", path=str(root / "a" / "agents.md"), content="x") == [
        "a/agents.md"
    ]
    assert written(root, "edit_file", path="sub/AGENTS.md", old_string="a", new_string="b") == [
        "sub/AGENTS.md"
    ]
    patch = "@@ .github/copilot-instructions.md\n+\n~x\n@@ notes.md\n+\n~y\n"
    assert written(root, "apply_patch", input=patch) == [".github/copilot-instructions.md"]
    assert written(root, "apply_patch", input="not a patch") == []
    assert written(root, "write_file", path="notes.md", content="x") == []
    assert written(root, "write_file", path="../AGENTS.md", content="x") == []  # refused anyway
    assert written(root, "read_file", path="AGENTS.md") == []  # not a write


def test_accept_repair_applies_the_previews_files(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    context = ctx(root)
    assert context.read_state is not None
    context.read_state.repair_candidates["r1"] = {
        "files": {
            str(root / "a.lisp"): ["a.lisp", "digest", "(a)"],
            str(root / "AGENTS.md"): ["AGENTS.md", "digest", "rules"],
        },
        "repaired": [str(root / "a.lisp")],
    }
    found = written(root, "apply_patch", context, accept_repair="r1", path="a.lisp")
    assert found == ["AGENTS.md"]


def test_policy_asks_unless_denied_and_the_key_names_the_files(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    context = ctx(root)
    tool = TOOLS["write_file"]
    rules = {"path": "AGENTS.md", "content": "x"}
    other = {"path": "notes.md", "content": "x"}
    assert call_policy({}, tool, rules, context) == "ask"
    assert call_policy({"write_file": "allow"}, tool, rules, context) == "ask"
    assert call_policy({"file/write": "deny"}, tool, rules, context) == "deny"
    assert call_policy({}, tool, other, context) == "allow"
    assert call_approval_key(tool, rules, context) == "write_file@AGENTS.md"
    assert call_approval_key(tool, other, context) == "write_file"
    assert what_will_run(tool, rules, context) == (
        "writes AGENTS.md, project rules that later tasks are given as instructions"
    )


async def test_a_plugin_write_tool_with_a_path_is_covered(tmp_path: Path) -> None:
    async def run(args: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(ok=True, output="")

    plugin = FunctionTool(
        name="save_note",
        description="",
        parameters={"type": "object"},
        run=run,
        capability="file/write",
    )
    root = tmp_path.resolve()
    check = CliApprovalCheck({})
    refusal = await check(plugin, {"path": "CLAUDE.md"}, ctx(root))
    assert refusal is not None and refusal.startswith(
        "approval_denied: save_note writes CLAUDE.md, project rules"
    )
    assert await check(plugin, {"path": "notes.md"}, ctx(root)) is None
    denied = await CliApprovalCheck({"save_note": "deny"})(plugin, {"path": "CLAUDE.md"}, ctx(root))
    assert denied == "approval_denied: save_note is denied by the approval policy"


def test_the_trust_store_notes_rules_writes_and_says_what_they_are(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    store = TrustStore(tmp_path / "trust.json")
    store.note_agent_writes(root, [root / "AGENTS.md"], project_rules=True)
    assert store.agent_writes(root) == ["AGENTS.md"]
    assert store.project_rules_writes(root) == ["AGENTS.md"]
    refusal = agent_writes_refusal(store, root, "the test command")
    assert refusal == (
        "workspace_changed: the agent wrote AGENTS.md, project rules that later tasks are given "
        "as instructions; the test command is not started until you confirm that by trusting "
        "this workspace again (`lich trust`, or the command lich.trustWorkspace)"
    )
    # With code written in a task without process/exec too, the refusal says so, as before.
    store.note_agent_writes(root, [root / "conftest.py"])
    refusal = agent_writes_refusal(store, root, "the test command")
    assert refusal is not None and "in a task without process/exec" in refusal
    assert store.confirm_agent_writes(root)
    assert store.agent_writes(root) == [] and store.project_rules_writes(root) == []
