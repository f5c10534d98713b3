"""memory_append (dated entries through the workspace) and the write tools' MEMORY.md refusal."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lich_core.hashline.anchors import render_rows
from lich_core.tools.builtin import builtin_tools
from lich_core.tools.builtin import memory_append as memory_module
from lich_core.tools.builtin.apply_patch import TOOL as APPLY_PATCH
from lich_core.tools.builtin.edit_file import TOOL as EDIT
from lich_core.tools.builtin.memory_append import TOOL as APPEND
from lich_core.tools.builtin.read_file import TOOL as READ_FILE
from lich_core.tools.builtin.write_file import TOOL as WRITE
from lich_core.tools.memory import MAX_ENTRY_CHARS, MEMORY_HEADER
from lich_core.tools.types import ToolContext, ToolResult
from lich_core.workspace import FileChange
from tests.support.workspaces import BufferWorkspace

REFUSAL = "forbidden_path: MEMORY.md is append-only: use memory_append"
T0 = datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone.utc)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work.resolve()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[datetime]]:
    """memory_append's time source, frozen; append to the list to move it on."""
    times = [T0]
    monkeypatch.setattr(memory_module, "utc_now", lambda: times[-1])
    yield times


def make_ctx(root: Path, workspace: Any = None) -> ToolContext:
    return ToolContext(work_dir=root, workspace=workspace, edit_label="lich: test")


async def run(tool: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    result = await tool.execute(args, ctx)
    assert isinstance(result, ToolResult)
    if not result.ok:
        assert result.output == "" and result.error
    return result


# ===================== memory_append =====================


async def test_creates_memory_md_with_a_header_and_a_dated_entry(
    root: Path, clock: list[datetime]
) -> None:
    result = await run(APPEND, {"text": "The suite needs a warm database."}, make_ctx(root))
    assert result.ok, result.error
    assert (root / "MEMORY.md").read_text() == (
        MEMORY_HEADER + "\n## 2024-05-06 07:08 UTC\n\nThe suite needs a warm database.\n"
    )
    assert MEMORY_HEADER.count("\n") == 1 and MEMORY_HEADER.startswith("# ")
    assert (
        result.output
        == "Appended an entry (2024-05-06 07:08 UTC, 32 chars) to MEMORY.md (new file)"
    )
    assert result.details["prior_content"] is None and result.details["path"] == "MEMORY.md"


async def test_appends_entries_and_never_rewrites_earlier_ones(
    root: Path, clock: list[datetime]
) -> None:
    ctx = make_ctx(root)
    existing = "# Team notes\n\nhand-written, kept byte for byte  \n"
    (root / "MEMORY.md").write_text(existing)
    assert (await run(APPEND, {"text": "first"}, ctx)).ok
    clock.append(T0 + timedelta(hours=30, minutes=5))
    second = await run(APPEND, {"text": "\n\nsecond\nwith two lines\n\n"}, ctx)
    assert second.ok and "(new file)" not in second.output
    assert (root / "MEMORY.md").read_text() == (
        existing
        + "\n## 2024-05-06 07:08 UTC\n\nfirst\n"
        + "\n## 2024-05-07 13:13 UTC\n\nsecond\nwith two lines\n"
    )


async def test_a_last_line_without_newline_gets_one_first(
    root: Path, clock: list[datetime]
) -> None:
    (root / "MEMORY.md").write_text("# Notes\nno newline at the end")
    assert (await run(APPEND, {"text": "next"}, make_ctx(root))).ok
    assert (
        root / "MEMORY.md"
    ).read_text() == "# Notes\nno newline at the end\n\n## 2024-05-06 07:08 UTC\n\nnext\n"


async def test_other_time_zones_are_written_in_utc(root: Path, clock: list[datetime]) -> None:
    clock.append(datetime(2024, 5, 6, 23, 30, tzinfo=timezone(timedelta(hours=-2))))
    assert (await run(APPEND, {"text": "late"}, make_ctx(root))).ok
    assert "\n## 2024-05-07 01:30 UTC\n" in (root / "MEMORY.md").read_text()


async def test_goes_through_the_workspace_as_an_append_edit(
    root: Path, clock: list[datetime]
) -> None:
    prior = "# Memory\n\n## 2024-01-01 00:00 UTC\n\nold\n"
    (root / "MEMORY.md").write_text(prior)
    workspace = BufferWorkspace(root)
    result = await run(APPEND, {"text": "new"}, make_ctx(root, workspace))
    assert result.ok, result.error
    [(changes, label)] = workspace.applied
    assert label == "lich: test"
    [change] = changes
    expected = prior + "\n## 2024-05-06 07:08 UTC\n\nnew\n"
    assert change == FileChange.write(root / "MEMORY.md", expected, prior)
    assert change.kind == "write" and change.base_text == prior
    # Only lines after the old ones change: an editor shows an insertion at the end, undoable.
    assert [(r.start, r.end) for r in change.replacements] == [(5, 5)]
    assert result.details["prior_content"] == prior


async def test_an_open_buffer_is_appended_to_not_the_disk_text(
    root: Path, clock: list[datetime]
) -> None:
    (root / "MEMORY.md").write_text("# disk\n")
    workspace = BufferWorkspace(root, {root / "MEMORY.md": "# buffer\n"})
    assert (await run(APPEND, {"text": "x"}, make_ctx(root, workspace))).ok
    assert workspace.buffers[root / "MEMORY.md"] == "# buffer\n\n## 2024-05-06 07:08 UTC\n\nx\n"
    assert (root / "MEMORY.md").read_text() == "# disk\n"


async def test_without_a_workspace_falls_back_to_disk(root: Path, clock: list[datetime]) -> None:
    ctx = make_ctx(root)
    ctx.workspace = None
    assert (await run(APPEND, {"text": "on disk"}, ctx)).ok
    assert (root / "MEMORY.md").read_text().endswith("\n## 2024-05-06 07:08 UTC\n\non disk\n")


async def test_a_rejected_edit_writes_nothing(root: Path, clock: list[datetime]) -> None:
    (root / "MEMORY.md").write_text("# kept\n")
    workspace = BufferWorkspace(root, reject="the user said no")
    result = await run(APPEND, {"text": "x"}, make_ctx(root, workspace))
    assert result.error == "edit_rejected: the user said no"
    assert (root / "MEMORY.md").read_text() == "# kept\n"


@pytest.mark.parametrize(
    "args", [{}, {"text": ""}, {"text": " \n\t\n"}, {"text": None}, {"text": []}]
)
async def test_empty_text_is_missing_arg(
    root: Path, clock: list[datetime], args: dict[str, Any]
) -> None:
    result = await run(APPEND, args, make_ctx(root))
    assert result.error == "missing_arg: text"
    assert not (root / "MEMORY.md").exists()


async def test_over_4000_chars_is_too_large(root: Path, clock: list[datetime]) -> None:
    ctx = make_ctx(root)
    result = await run(APPEND, {"text": "x" * (MAX_ENTRY_CHARS + 1)}, ctx)
    assert result.error.startswith("too_large: text is 4001 chars")
    assert not (root / "MEMORY.md").exists()
    assert (await run(APPEND, {"text": "y" * MAX_ENTRY_CHARS}, ctx)).ok


async def test_never_writes_through_a_symlink(
    root: Path, tmp_path: Path, clock: list[datetime]
) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("# elsewhere\n")
    os.symlink(target, root / "MEMORY.md")
    result = await run(APPEND, {"text": "x"}, make_ctx(root))
    assert result.error.startswith("path_escape:")
    assert target.read_text() == "# elsewhere\n"


async def test_a_directory_named_memory_md_is_refused(root: Path, clock: list[datetime]) -> None:
    (root / "MEMORY.md").mkdir()
    assert (await run(APPEND, {"text": "x"}, make_ctx(root))).error.startswith("is_directory:")


def test_memory_append_is_a_file_write_builtin() -> None:
    tool = {tool.name: tool for tool in builtin_tools()}["memory_append"]
    assert getattr(tool, "capability", None) == "file/write"
    assert tool.parameters["required"] == ["text"]
    assert (
        "not instructions" in tool.description and "not loaded into the prompt" in tool.description
    )


# ===================== the write tools refuse MEMORY.md =====================


@pytest.mark.parametrize("target", ["MEMORY.md", "./MEMORY.md", "sub/../MEMORY.md", "ABS"])
async def test_write_file_refuses_memory_md(root: Path, target: str) -> None:
    (root / "sub").mkdir()
    if target == "ABS":
        target = str(root / "MEMORY.md")
    for exists in (False, True):
        if exists:
            (root / "MEMORY.md").write_text("# kept\n")
        result = await run(WRITE, {"path": target, "content": "overwritten\n"}, make_ctx(root))
        assert result.error == REFUSAL
        assert (root / "MEMORY.md").exists() == exists
    assert (root / "MEMORY.md").read_text() == "# kept\n"


async def test_edit_file_refuses_memory_md(root: Path) -> None:
    (root / "MEMORY.md").write_text("# kept\n")
    result = await run(
        EDIT, {"path": "MEMORY.md", "old_string": "kept", "new_string": "gone"}, make_ctx(root)
    )
    assert result.error == REFUSAL
    assert (root / "MEMORY.md").read_text() == "# kept\n"


async def test_apply_patch_refuses_memory_md_and_writes_nothing(root: Path) -> None:
    (root / "MEMORY.md").write_text("# kept\n")
    (root / "a.txt").write_text("a\n")
    ctx = make_ctx(root)
    for path in ("MEMORY.md", "a.txt"):
        assert (await run(READ_FILE, {"path": path}, ctx)).ok
    rows = render_rows(["# kept"], 1)
    result = await run(
        APPLY_PATCH, {"input": f"@@ MEMORY.md\n= {rows[:4]}..{rows[:4]}\n~# gone\n"}, ctx
    )
    assert result.error == REFUSAL
    # Together with another file: the whole patch is refused.
    both = await run(APPLY_PATCH, {"input": "@@ a.txt\n+\n~b\n@@ MEMORY.md\n+\n~more\n"}, ctx)
    assert both.error == REFUSAL
    assert (root / "MEMORY.md").read_text() == "# kept\n" and (root / "a.txt").read_text() == "a\n"
    # Creating it by patch is refused too.
    (root / "MEMORY.md").unlink()
    assert (await run(APPLY_PATCH, {"input": "@@ MEMORY.md\n+\n~new\n"}, ctx)).error == REFUSAL
    assert not (root / "MEMORY.md").exists()


async def test_write_tools_still_write_other_files(root: Path) -> None:
    ctx = make_ctx(root)
    (root / "MEMORY.md").write_text("# kept\n")
    for target in ("notes/MEMORY.md", "MEMORY.md.bak", "MEMORY.txt", "docs/MEMORY.md"):
        result = await run(WRITE, {"path": target, "content": "ok\n"}, ctx)
        assert result.ok, (target, result.error)
    edited = await run(
        EDIT, {"path": "notes/MEMORY.md", "old_string": "ok", "new_string": "fine"}, ctx
    )
    assert edited.ok, edited.error
    patched = await run(APPLY_PATCH, {"input": "@@ fresh.txt\n+\n~hello\n"}, ctx)
    assert patched.ok, patched.error
    assert (root / "fresh.txt").read_text() == "hello\n"
    assert (root / "MEMORY.md").read_text() == "# kept\n"


async def test_other_spellings_are_other_files_on_a_case_sensitive_file_system(root: Path) -> None:
    (root / "MEMORY.md").write_text("# kept\n")
    same_file = os.path.exists(root / "memory.md")  # a case-insensitive file system
    result = await run(WRITE, {"path": "memory.md", "content": "lower\n"}, make_ctx(root))
    if same_file:
        assert result.error == REFUSAL
    else:
        assert result.ok and (root / "memory.md").read_text() == "lower\n"
    assert (root / "MEMORY.md").read_text() == "# kept\n"


async def test_a_symlink_alias_of_memory_md_is_refused(root: Path) -> None:
    (root / "MEMORY.md").write_text("# kept\n")
    os.symlink(root / "MEMORY.md", root / "alias.md")
    result = await run(WRITE, {"path": "alias.md", "content": "x\n"}, make_ctx(root))
    assert result.error.startswith(("path_escape:", "forbidden_path:"))
    assert (root / "MEMORY.md").read_text() == "# kept\n"


async def test_memory_append_still_works_after_a_refusal(root: Path, clock: list[datetime]) -> None:
    ctx = make_ctx(root)
    assert (await run(WRITE, {"path": "MEMORY.md", "content": "x\n"}, ctx)).error == REFUSAL
    assert (await run(APPEND, {"text": "the right way"}, ctx)).ok
    assert (root / "MEMORY.md").read_text().endswith("\n\nthe right way\n")
