"""File tools: write_file, edit_file, list_dir, find_files (through the Workspace, confined)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lich_core.errors import EditRejected
from lich_core.hashline.replacements import apply_replacements, line_replacements
from lich_core.tools.builtin import edit_file as edit_module
from lich_core.tools.builtin import find_files as find_module
from lich_core.tools.builtin.edit_file import TOOL as EDIT
from lich_core.tools.builtin.find_files import TOOL as FIND
from lich_core.tools.builtin.find_files import GlobMatcher, parse_pattern, render, walk
from lich_core.tools.builtin.list_dir import TOOL as LIST
from lich_core.tools.builtin.write_file import TOOL as WRITE
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import ToolContext, ToolResult
from lich_core.workspace import DiskWorkspace, FileChange, LineReplacement
from tests.support.workspaces import BufferWorkspace

# --- workspaces that show the tools go through the seam ---


class RecordingWorkspace(DiskWorkspace):
    """Writes to disk like DiskWorkspace and remembers every change set and label."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.applied: list[tuple[list[FileChange], str]] = []

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        self.applied.append((list(changes), label))
        await super().apply(changes, label)


class RejectingWorkspace(DiskWorkspace):
    """An editor that says no (applied: false)."""

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        raise EditRejected("the editor refused the edit")


def make_ctx(root: Path, workspace: Any = None) -> ToolContext:
    return ToolContext(work_dir=root, workspace=workspace, edit_label="lich: test")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.py").write_text("SECRET = 1\n")
    (other / "inner").mkdir()
    (other / "inner" / "deep.py").write_text("x\n")
    return other.resolve()


def make_files(root: Path, *paths: str, text: str = "x\n") -> None:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


async def run(tool: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    result = await tool.execute(args, ctx)
    assert isinstance(result, ToolResult)
    if not result.ok:
        assert result.output == "" and result.error
    return result


# ===================== write_file =====================


async def test_write_creates_file_and_parents(root: Path) -> None:
    ws = RecordingWorkspace(root)
    result = await run(
        WRITE, {"path": "src/pkg/mod.py", "content": "print('hi')\n"}, make_ctx(root, ws)
    )
    assert result.ok
    assert result.output.startswith("Wrote 12 chars to src/pkg/mod.py")
    assert (root / "src/pkg/mod.py").read_text() == "print('hi')\n"
    assert result.details["prior_content"] is None
    assert result.details["path"] == "src/pkg/mod.py"
    [(changes, label)] = ws.applied
    assert label == "lich: test"
    # A new file: the one replacement that covers its whole text.
    replacement = (LineReplacement(0, 0, "print('hi')\n"),)
    assert changes == [
        FileChange(root / "src/pkg/mod.py", "write", "print('hi')\n", None, replacement)
    ]


async def test_write_overwrite_keeps_prior_content(root: Path) -> None:
    make_files(root, "a.txt", text="old text\n")
    ws = RecordingWorkspace(root)
    result = await run(WRITE, {"path": "a.txt", "content": "new"}, make_ctx(root, ws))
    assert result.ok and result.output == "Wrote 3 chars to a.txt"
    assert result.details["prior_content"] == "old text\n"
    assert (root / "a.txt").read_text() == "new"
    # A full rewrite: one replacement of every line.
    assert ws.applied[0][0][0].replacements == (LineReplacement(0, 1, "new"),)


async def test_write_over_an_existing_file_replaces_only_changed_lines(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE)
    ws = RecordingWorkspace(root)
    result = await run(
        WRITE,
        {"path": "m.py", "content": SAMPLE.replace("return 2", "return 3")},
        make_ctx(root, ws),
    )
    assert result.ok
    assert ws.applied[0][0][0].replacements == (LineReplacement(5, 6, "    return 3\n"),)


async def test_write_empty_content_is_allowed(root: Path) -> None:
    result = await run(WRITE, {"path": "empty.txt", "content": ""}, make_ctx(root))
    assert result.ok and (root / "empty.txt").read_text() == ""
    assert "Wrote 0 chars" in result.output


async def test_write_counts_chars_not_bytes(root: Path) -> None:
    result = await run(WRITE, {"path": "u.txt", "content": "héllo ✓"}, make_ctx(root))
    assert result.output.startswith("Wrote 7 chars")


async def test_write_missing_args(root: Path) -> None:
    ctx = make_ctx(root)
    assert (await run(WRITE, {"content": "x"}, ctx)).error == "missing_arg: path"
    assert (await run(WRITE, {"path": "a.txt"}, ctx)).error == "missing_arg: content"
    assert (await run(WRITE, {"path": "a.txt", "content": 5}, ctx)).error == "missing_arg: content"


async def test_write_refuses_directory(root: Path) -> None:
    (root / "adir").mkdir()
    result = await run(WRITE, {"path": "adir", "content": "x"}, make_ctx(root))
    assert result.error.startswith("is_directory:")
    assert (root / "adir").is_dir()


async def test_write_confinement(root: Path, outside: Path) -> None:
    ctx = make_ctx(root)
    assert (await run(WRITE, {"path": "../evil.txt", "content": "x"}, ctx)).error.startswith(
        "path_escape:"
    )
    absolute = str(outside / "evil.txt")
    assert (await run(WRITE, {"path": absolute, "content": "x"}, ctx)).error.startswith(
        "path_escape:"
    )
    assert not (outside / "evil.txt").exists() and not (root.parent / "evil.txt").exists()
    inside = await run(WRITE, {"path": str(root / "ok.txt"), "content": "x"}, ctx)
    assert inside.ok and (root / "ok.txt").read_text() == "x"


async def test_write_through_symlinks(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "out")
    os.symlink(outside / "secret.py", root / "secret_link.py")
    make_files(root, "real.py", text="real\n")
    os.symlink(root / "real.py", root / "alias.py")
    ctx = make_ctx(root)
    for target in ("out/new.py", "secret_link.py", "alias.py"):
        result = await run(WRITE, {"path": target, "content": "pwned"}, ctx)
        assert result.error.startswith("path_escape:"), target
    assert (outside / "secret.py").read_text() == "SECRET = 1\n"
    assert not (outside / "new.py").exists()
    assert (root / "real.py").read_text() == "real\n"
    assert os.path.islink(root / "alias.py")


@pytest.mark.parametrize(
    "target", [".env", "config/.env.local", ".lich/config.json", ".lich/approvals.json"]
)
async def test_write_deny_list(root: Path, target: str) -> None:
    result = await run(WRITE, {"path": target, "content": "x"}, make_ctx(root))
    assert result.error.startswith("forbidden_path:")
    assert not (root / target).exists()


async def test_write_lich_skills_allowed(root: Path) -> None:
    result = await run(
        WRITE, {"path": ".lich/skills/testing.md", "content": "# notes\n"}, make_ctx(root)
    )
    assert result.ok and (root / ".lich/skills/testing.md").exists()


async def test_write_rejected_by_workspace_leaves_file_untouched(root: Path) -> None:
    make_files(root, "a.txt", text="keep me\n")
    result = await run(
        WRITE, {"path": "a.txt", "content": "changed"}, make_ctx(root, RejectingWorkspace(root))
    )
    assert result.ok is False
    assert result.error == "edit_rejected: the editor refused the edit"
    assert (root / "a.txt").read_text() == "keep me\n"


async def test_write_base_text_comes_from_the_workspace_buffer(root: Path) -> None:
    make_files(root, "a.py", text="on disk\n")
    ws = BufferWorkspace(root, {root / "a.py": "unsaved buffer\n"})
    result = await run(WRITE, {"path": "a.py", "content": "new\n"}, make_ctx(root, ws))
    assert result.ok and result.details["prior_content"] == "unsaved buffer\n"
    assert ws.applied[0][0][0].base_text == "unsaved buffer\n"
    assert ws.buffers[root / "a.py"] == "new\n"
    assert (root / "a.py").read_text() == "on disk\n"  # the workspace decides how to write


async def test_write_under_a_file_is_rejected_cleanly(root: Path) -> None:
    make_files(root, "afile")
    result = await run(WRITE, {"path": "afile/child.txt", "content": "x"}, make_ctx(root))
    assert result.ok is False and result.error.startswith("edit_rejected:")
    assert (root / "afile").read_text() == "x\n"


# ===================== edit_file =====================

SAMPLE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


async def test_edit_unique_replace(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE)
    ws = RecordingWorkspace(root)
    result = await run(
        EDIT,
        {"path": "m.py", "old_string": "return 2", "new_string": "return 3"},
        make_ctx(root, ws),
    )
    assert result.ok
    assert result.output == "Edited m.py: replaced 1 occurrence (+1 -1 lines)"
    assert (root / "m.py").read_text() == SAMPLE.replace("return 2", "return 3")
    assert result.details["prior_content"] == SAMPLE and result.details["path"] == "m.py"
    [(changes, label)] = ws.applied
    change = changes[0]
    assert label == "lich: test"
    assert change.base_text == SAMPLE and change.kind == "write"
    # Only line 5 (0-based) changes, so only line 5 is replaced.
    assert change.replacements == (LineReplacement(5, 6, "    return 3\n"),)


async def test_edit_not_found(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE)
    result = await run(
        EDIT, {"path": "m.py", "old_string": "return 9", "new_string": "x"}, make_ctx(root)
    )
    assert result.error.startswith("old_string_not_found:")
    assert (root / "m.py").read_text() == SAMPLE


async def test_edit_not_unique_reports_count(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE + "    return 1\n")
    result = await run(
        EDIT, {"path": "m.py", "old_string": "    return", "new_string": "x"}, make_ctx(root)
    )
    assert result.error.startswith("old_string_not_unique (3):")
    assert (root / "m.py").read_text() == SAMPLE + "    return 1\n"


async def test_edit_replace_all(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE)
    ws = RecordingWorkspace(root)
    args = {"path": "m.py", "old_string": "return", "new_string": "yield", "replace_all": True}
    result = await run(EDIT, args, make_ctx(root, ws))
    assert result.ok and "replaced 2 occurrences" in result.output
    assert (root / "m.py").read_text() == SAMPLE.replace("return", "yield")
    assert ws.applied[0][0][0].replacements == (
        LineReplacement(1, 2, "    yield 1\n"),
        LineReplacement(5, 6, "    yield 2\n"),
    )


async def test_edit_replacement_is_literal(root: Path) -> None:
    make_files(root, "r.txt", text="value = a.*b\n")
    new = r"\1 $& \n \\ \g<0>"
    result = await run(
        EDIT, {"path": "r.txt", "old_string": "a.*b", "new_string": new}, make_ctx(root)
    )
    assert result.ok
    assert (root / "r.txt").read_text() == "value = " + new + "\n"


async def test_edit_multiline_change_and_line_count(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE)
    ws = RecordingWorkspace(root)
    args = {
        "path": "m.py",
        "old_string": "def g():\n    return 2\n",
        "new_string": "def g():\n    a = 2\n    return a\n",
    }
    result = await run(EDIT, args, make_ctx(root, ws))
    assert result.ok and "(+2 -1 lines)" in result.output
    assert ws.applied[0][0][0].replacements == (LineReplacement(5, 6, "    a = 2\n    return a\n"),)


async def test_edit_missing_file_and_args(root: Path) -> None:
    ctx = make_ctx(root)
    result = await run(EDIT, {"path": "nope.py", "old_string": "a", "new_string": "b"}, ctx)
    assert result.error.startswith("not_found:")
    assert (
        await run(EDIT, {"old_string": "a", "new_string": "b"}, ctx)
    ).error == "missing_arg: path"
    make_files(root, "m.py", text=SAMPLE)
    assert (
        await run(EDIT, {"path": "m.py", "new_string": "b"}, ctx)
    ).error == "missing_arg: old_string"
    assert (
        await run(EDIT, {"path": "m.py", "old_string": "f"}, ctx)
    ).error == "missing_arg: new_string"
    assert (
        await run(EDIT, {"path": "m.py", "old_string": "", "new_string": "b"}, ctx)
    ).error.startswith("missing_arg: old_string")
    # Deleting text (empty new_string) is fine.
    assert (await run(EDIT, {"path": "m.py", "old_string": "\n\n\n", "new_string": "\n"}, ctx)).ok


async def test_edit_identical_strings_is_an_error(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE)
    result = await run(
        EDIT, {"path": "m.py", "old_string": "f()", "new_string": "f()"}, make_ctx(root)
    )
    assert result.error.startswith("no_change:")


async def test_edit_confinement_and_deny_list(root: Path, outside: Path) -> None:
    os.symlink(outside / "secret.py", root / "link.py")
    make_files(root, ".env", text="A=1\n")
    ctx = make_ctx(root)
    args = {"old_string": "SECRET", "new_string": "X"}
    assert (await run(EDIT, {"path": "../outside/secret.py", **args}, ctx)).error.startswith(
        "path_escape:"
    )
    assert (await run(EDIT, {"path": str(outside / "secret.py"), **args}, ctx)).error.startswith(
        "path_escape:"
    )
    assert (await run(EDIT, {"path": "link.py", **args}, ctx)).error.startswith("path_escape:")
    env_edit = await run(EDIT, {"path": ".env", "old_string": "A=1", "new_string": "A=2"}, ctx)
    assert env_edit.error.startswith("forbidden_path:")
    assert (outside / "secret.py").read_text() == "SECRET = 1\n"
    assert (root / ".env").read_text() == "A=1\n"


async def test_edit_rejected_by_workspace_leaves_file_untouched(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE)
    ctx = make_ctx(root, RejectingWorkspace(root))
    result = await run(
        EDIT, {"path": "m.py", "old_string": "return 1", "new_string": "return 7"}, ctx
    )
    assert result.error == "edit_rejected: the editor refused the edit"
    assert (root / "m.py").read_text() == SAMPLE


async def test_edit_reads_the_unsaved_buffer(root: Path) -> None:
    make_files(root, "m.py", text=SAMPLE)
    buffer = SAMPLE.replace("return 1", "return 100")
    ws = BufferWorkspace(root, {root / "m.py": buffer})
    result = await run(
        EDIT,
        {"path": "m.py", "old_string": "return 100", "new_string": "return 5"},
        make_ctx(root, ws),
    )
    assert result.ok and result.details["prior_content"] == buffer
    assert ws.buffers[root / "m.py"] == SAMPLE.replace("return 1", "return 5")
    assert (root / "m.py").read_text() == SAMPLE  # disk untouched: the editor owns the buffer


async def test_edit_of_an_unsaved_new_buffer(root: Path) -> None:
    ws = BufferWorkspace(root, {root / "new.py": "a = 1\n"})
    result = await run(
        EDIT, {"path": "new.py", "old_string": "1", "new_string": "2"}, make_ctx(root, ws)
    )
    assert result.ok and ws.buffers[root / "new.py"] == "a = 2\n"


async def test_edit_stale_disk_file_is_rejected(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone saves the file between the tool's read and its write: nothing is overwritten."""
    make_files(root, "m.py", text=SAMPLE)
    ws = DiskWorkspace(root)
    real_read = ws.read_text

    def read_then_someone_edits(path: Path) -> str:
        text = real_read(path)
        Path(path).write_text("their version\n")
        return text

    monkeypatch.setattr(ws, "read_text", read_then_someone_edits)
    result = await run(
        EDIT,
        {"path": "m.py", "old_string": "return 1", "new_string": "return 7"},
        make_ctx(root, ws),
    )
    assert result.error.startswith("edit_rejected: stale_file:")
    assert (root / "m.py").read_text() == "their version\n"


@settings(max_examples=100, deadline=None)
@given(
    old=st.text(alphabet="ab\n\r", max_size=40),
    needle=st.text(alphabet="ab\n", min_size=1, max_size=4),
    new=st.text(alphabet="abc\n", max_size=5),
)
async def test_edit_file_change_carries_the_one_functions_replacements(
    tmp_path_factory: pytest.TempPathFactory, old: str, needle: str, new: str
) -> None:
    if needle not in old or needle == new:
        return
    root = tmp_path_factory.mktemp("edit").resolve()
    (root / "f.txt").write_bytes(old.encode())
    ws = RecordingWorkspace(root)
    args = {"path": "f.txt", "old_string": needle, "new_string": new, "replace_all": True}
    result = await run(EDIT, args, make_ctx(root, ws))
    assert result.ok, result.error
    [change] = ws.applied[0][0]
    assert change.new_text == old.replace(needle, new)
    assert change.replacements == line_replacements(old, change.new_text)
    assert apply_replacements(old, change.replacements) == change.new_text


def test_edit_occurrences_on_one_line_are_one_replacement() -> None:
    old = "k k\nother\nk\n"
    assert line_replacements(old, old.replace("k", "v")) == (
        LineReplacement(0, 1, "v v\n"),
        LineReplacement(2, 3, "v\n"),
    )


def test_edit_module_exports_one_tool() -> None:
    assert edit_module.TOOL.name == "edit_file" and edit_module.TOOL.capability == "file/edit"


# ===================== list_dir =====================


@pytest.fixture
def tree(root: Path) -> Path:
    make_files(
        root,
        "b.txt",
        "a.py",
        "src/main.py",
        "src/util/helpers.py",
        "src/util/deep/er/x.py",
        "docs/index.md",
        "node_modules/pkg/index.js",
        ".git/HEAD",
        "dist/out.js",
        ".lich/skills/s.md",
        ".cursor/rules",
        "__pycache__/a.pyc",
        ".venv/bin/python",
    )
    (root / "a.py").write_text("x" * 2048)
    return root


async def test_list_dir_dirs_first_sorted_with_sizes(tree: Path) -> None:
    result = await run(LIST, {}, make_ctx(tree))
    assert result.ok
    lines = result.output.splitlines()
    assert lines[0].startswith("./")
    assert lines[1:] == ["docs/", "src/", "a.py  (2.0 KiB)", "b.txt  (2 B)"]


async def test_list_dir_skips_skip_dirs(tree: Path) -> None:
    output = (await run(LIST, {"depth": 4}, make_ctx(tree))).output
    for skipped in ("node_modules", ".git", "dist", ".lich", ".cursor", "__pycache__", ".venv"):
        assert skipped not in output


async def test_list_dir_depth_and_clamping(tree: Path) -> None:
    ctx = make_ctx(tree)
    depth2 = (await run(LIST, {"path": "src", "depth": 2}, ctx)).output.splitlines()[1:]
    assert depth2 == ["util/", "util/deep/", "util/helpers.py  (2 B)", "main.py  (2 B)"]
    deep = (await run(LIST, {"path": "src", "depth": 99}, ctx)).output
    assert "util/deep/er/x.py" in deep  # clamped to 4 levels: util/deep/er/x.py is level 4
    assert "(depth 4)" in deep
    shallow = (await run(LIST, {"path": "src", "depth": 0}, ctx)).output
    assert "(depth 1)" in shallow and "helpers.py" not in shallow
    as_text = (await run(LIST, {"path": "src", "depth": "2"}, ctx)).output
    assert "util/helpers.py" in as_text


async def test_list_dir_explicit_skip_dir_is_listed(tree: Path) -> None:
    result = await run(LIST, {"path": "node_modules", "depth": 2}, make_ctx(tree))
    assert result.ok and "pkg/" in result.output and "pkg/index.js" in result.output


async def test_list_dir_symlinks_listed_not_descended(root: Path, outside: Path) -> None:
    make_files(root, "real/inner.py")
    os.symlink(root / "real", root / "linkdir")
    os.symlink(root / "real" / "inner.py", root / "linkfile.py")
    os.symlink(root / "missing", root / "dangling")
    result = await run(LIST, {"depth": 3}, make_ctx(root))
    assert "linkdir -> " in result.output and "linkfile.py -> " in result.output
    assert "dangling -> " in result.output
    assert "linkdir/inner.py" not in result.output
    assert "real/inner.py" in result.output


async def test_list_dir_cap_500(root: Path) -> None:
    for index in range(600):
        (root / f"f{index:04d}.txt").write_text("")
    result = await run(LIST, {}, make_ctx(root))
    lines = result.output.splitlines()
    listed = [line for line in lines if line.startswith("f")]
    assert len(listed) == 500
    assert listed[0].startswith("f0000.txt") and listed[-1].startswith("f0499.txt")
    assert "100 more entries omitted" in lines[-1]


async def test_list_dir_errors(root: Path, outside: Path) -> None:
    make_files(root, "file.txt")
    os.symlink(outside, root / "out")
    ctx = make_ctx(root)
    assert (await run(LIST, {"path": "missing"}, ctx)).error.startswith("not_found:")
    assert (await run(LIST, {"path": "file.txt"}, ctx)).error.startswith("not_a_directory:")
    assert (await run(LIST, {"path": ".."}, ctx)).error.startswith("path_escape:")
    assert (await run(LIST, {"path": str(outside)}, ctx)).error.startswith("path_escape:")
    assert (await run(LIST, {"path": "out"}, ctx)).error.startswith("path_escape:")


async def test_list_dir_empty(root: Path) -> None:
    (root / "empty").mkdir()
    result = await run(LIST, {"path": "empty"}, make_ctx(root))
    assert result.ok and "(empty directory)" in result.output


async def test_list_dir_includes_unsaved_buffers(root: Path) -> None:
    make_files(root, "src/a.py")
    ws = BufferWorkspace(
        root, {root / "src/new.py": "x", root / "fresh/dir/n.py": "y", root / "src/a.py": "z"}
    )
    result = await run(LIST, {"depth": 3}, make_ctx(root, ws))
    lines = result.output.splitlines()
    assert "src/new.py  (unsaved)" in lines
    assert "fresh/" in lines and "fresh/dir/" in lines and "fresh/dir/n.py  (unsaved)" in lines
    assert sum(1 for line in lines if line.startswith("src/a.py")) == 1  # on disk: listed once


# ===================== find_files =====================


@pytest.fixture
def code_tree(root: Path) -> Path:
    make_files(
        root,
        "top.py",
        "README.md",
        "src/a.py",
        "src/b.txt",
        "src/pkg/c.py",
        "src/pkg/sub/d.py",
        "src/pkg/sub/e.PY",
        "tests/test_a.py",
        "tests/test_b.py",
        "tests/helper.py",
        "node_modules/lib/index.js",
        "node_modules/lib/x.py",
        "src/node_modules/y.py",
        ".git/hooks/pre.py",
        ".venv/lib/site.py",
        "pkg.py/inside.py",
    )
    return root


async def find(root: Path, pattern: str, ws: Any = None) -> list[str]:
    result = await run(FIND, {"pattern": pattern}, make_ctx(root, ws))
    assert result.ok, result.error
    return [
        line
        for line in result.output.splitlines()
        if not line.startswith(("No files", "...", "[walk"))
    ]


async def test_find_globstar_spans_any_depth_including_zero(code_tree: Path) -> None:
    assert await find(code_tree, "**/*.py") == [
        "pkg.py/inside.py",
        "src/a.py",
        "src/pkg/c.py",
        "src/pkg/sub/d.py",
        "tests/helper.py",
        "tests/test_a.py",
        "tests/test_b.py",
        "top.py",
    ]
    assert await find(code_tree, "src/**/*.py") == ["src/a.py", "src/pkg/c.py", "src/pkg/sub/d.py"]
    assert await find(code_tree, "src/**/sub/*.py") == ["src/pkg/sub/d.py"]
    assert await find(code_tree, "src/pkg/**") == [
        "src/pkg/c.py",
        "src/pkg/sub/d.py",
        "src/pkg/sub/e.PY",
    ]


async def test_find_star_stays_within_a_segment(code_tree: Path) -> None:
    assert await find(code_tree, "*.py") == ["top.py"]
    assert await find(code_tree, "src/*.py") == ["src/a.py"]
    assert await find(code_tree, "src/*/*.py") == ["src/pkg/c.py"]
    assert await find(code_tree, "*/*.py") == [
        "pkg.py/inside.py",
        "src/a.py",
        "tests/helper.py",
        "tests/test_a.py",
        "tests/test_b.py",
    ]


async def test_find_question_mark_classes_and_case(code_tree: Path) -> None:
    assert await find(code_tree, "tests/test_?.py") == ["tests/test_a.py", "tests/test_b.py"]
    assert await find(code_tree, "tests/test_[a].py") == ["tests/test_a.py"]
    assert await find(code_tree, "tests/test_[!a].py") == ["tests/test_b.py"]
    assert await find(code_tree, "**/*.PY") == ["src/pkg/sub/e.PY"]  # case-sensitive


async def test_find_literal_path(code_tree: Path) -> None:
    assert await find(code_tree, "src/pkg/c.py") == ["src/pkg/c.py"]
    assert await find(code_tree, "./src/a.py") == ["src/a.py"]
    assert await find(code_tree, "src/missing/*.py") == []
    assert await find(code_tree, str(code_tree / "src" / "*.py")) == ["src/a.py"]  # absolute inside


async def test_find_directories_are_not_results(code_tree: Path) -> None:
    assert await find(code_tree, "src/*") == ["src/a.py", "src/b.txt"]
    assert "pkg.py" not in await find(code_tree, "*.py")


async def test_find_skip_dirs_unless_named(code_tree: Path) -> None:
    everything = await find(code_tree, "**")
    assert not [p for p in everything if p.split("/")[0] in {"node_modules", ".git", ".venv"}]
    assert "src/node_modules/y.py" not in everything
    assert await find(code_tree, "node_modules/**/*.py") == ["node_modules/lib/x.py"]
    assert await find(code_tree, "**/node_modules/*.py") == ["src/node_modules/y.py"]
    assert await find(code_tree, "**/node_modules/**/*.py") == [
        "node_modules/lib/x.py",
        "src/node_modules/y.py",
    ]
    assert await find(code_tree, ".git/**/*.py") == [".git/hooks/pre.py"]
    # A wildcard is not naming a skip dir.
    assert await find(code_tree, "*/lib/*.py") == []


async def test_find_symlinks(root: Path, outside: Path) -> None:
    make_files(root, "real/r.py")
    os.symlink(root / "real", root / "linkdir")
    os.symlink(root / "real" / "r.py", root / "alias.py")
    os.symlink(outside, root / "outdir")
    os.symlink(root / "nowhere.py", root / "dangling.py")
    assert await find(root, "**/*.py") == ["alias.py", "real/r.py"]


async def test_find_escapes(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "outdir")
    ctx = make_ctx(root)
    for pattern in (
        "../*.py",
        "src/../../x",
        str(outside / "*.py"),
        "/etc/*",
        "outdir/*.py",
        "outdir/**/*.py",
    ):
        result = await run(FIND, {"pattern": pattern}, ctx)
        assert result.error.startswith("path_escape:"), pattern


async def test_find_missing_pattern(root: Path) -> None:
    ctx = make_ctx(root)
    assert (await run(FIND, {}, ctx)).error == "missing_arg: pattern"
    assert (await run(FIND, {"pattern": ""}, ctx)).error == "missing_arg: pattern"
    assert (await run(FIND, {"pattern": "./"}, ctx)).error.startswith("missing_arg: pattern")


async def test_find_no_matches_message(root: Path) -> None:
    result = await run(FIND, {"pattern": "**/*.rs"}, make_ctx(root))
    assert result.ok and result.output == "No files match **/*.rs"


async def test_find_cap_1000_sorted_with_overflow(root: Path) -> None:
    (root / "many").mkdir()
    for index in range(1100):
        (root / "many" / f"f{index:04d}.py").write_text("")
    result = await run(FIND, {"pattern": "many/*.py"}, make_ctx(root))
    lines = result.output.splitlines()
    assert len(lines) == 1001
    assert lines[0] == "many/f0000.py" and lines[999] == "many/f0999.py"
    assert lines[-1].startswith("... and 100 more")
    assert result.details["matches"] == 1100


async def test_find_walk_entry_bound_is_reported(
    code_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(find_module, "MAX_WALK_ENTRIES", 5)
    result = await run(FIND, {"pattern": "**"}, make_ctx(code_tree))
    assert result.ok
    assert "[walk stopped early at the entry limit of 5 entries visited" in result.output
    assert result.details["visited"] == 5


async def test_find_walk_time_bound_is_reported(
    code_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(find_module, "MAX_WALK_MS", 0)
    monkeypatch.setattr(find_module, "CHECK_EVERY_ENTRIES", 1)
    result = await run(FIND, {"pattern": "**"}, make_ctx(code_tree))
    assert (
        result.ok
        and "time limit of 0 s" in result.output
        and "results are partial" in result.output
    )


async def test_find_cancelled_mid_walk(code_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(find_module, "CHECK_EVERY_ENTRIES", 1)
    ctx = make_ctx(code_tree)
    ctx.cancel.cancel()
    result = await run(FIND, {"pattern": "**"}, ctx)
    assert result.error == "cancelled"


async def test_find_includes_unsaved_buffers(code_tree: Path) -> None:
    ws = BufferWorkspace(
        code_tree,
        {
            code_tree / "src/new_mod.py": "",
            code_tree / "src/a.py": "",  # on disk too: listed once
            code_tree / "node_modules/new.py": "",  # skipped dir
            code_tree / "docs/x.md": "",
        },
    )
    assert await find(code_tree, "src/*.py", ws) == ["src/a.py", "src/new_mod.py"]
    assert "node_modules/new.py" not in await find(code_tree, "**/*.py", ws)


async def test_find_through_executor(code_tree: Path) -> None:
    executor = ToolExecutor(ToolRegistry([FIND]), work_dir=code_tree)
    result = await executor.execute("find_files", {"pattern": "tests/*.py"})
    assert result.ok and result.output.splitlines() == [
        "tests/helper.py",
        "tests/test_a.py",
        "tests/test_b.py",
    ]


def reference_glob(pattern: str, paths: Iterable[str]) -> list[str]:
    """An independent regex rendering of the glob, to check the segment NFA against."""
    parts = []
    for index, segment in enumerate(pattern.split("/")):
        last = index == len(pattern.split("/")) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        regex = ""
        for char in segment:
            regex += "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
        parts.append(regex + ("" if last else "/"))
    compiled = re.compile("".join(parts) + r"\Z")
    return sorted(p for p in paths if compiled.match(p))


@pytest.mark.parametrize(
    "pattern",
    [
        "**/*.py",
        "**",
        "*",
        "a/**",
        "a/**/b/*.txt",
        "**/b/**/*.py",
        "*/b/*",
        "**/c?.py",
        "a/*/**/*.md",
        "**/**/*.py",
    ],
)
async def test_find_agrees_with_reference_glob(root: Path, pattern: str) -> None:
    names = ["x.py", "c1.py", "n.txt", "r.md"]
    all_paths = []
    for folder in ["", "a/", "a/b/", "a/b/b/", "b/", "a/c/b/", "a/c/d/", "e/f/g/h/"]:
        for name in names:
            all_paths.append(folder + name)
    make_files(root, *all_paths)
    assert await find(root, pattern) == reference_glob(pattern, all_paths)


def test_parse_pattern() -> None:
    assert parse_pattern("./a//b/**/**/*.py", "/w") == ["a", "b", "**", "*.py"]
    assert parse_pattern("/w/src/*.py", "/w") == ["src", "*.py"]
    with pytest.raises(Exception, match="path_escape"):
        parse_pattern("/wx/src/*.py", "/w")


def test_walk_and_render_directly(code_tree: Path) -> None:
    matcher = GlobMatcher(["**", "*.py"])
    result = walk(str(code_tree), "", matcher, max_entries=3)
    assert result.stop.startswith("entry limit") and result.visited == 3
    text = render("**/*.py", list(result.paths), result)
    assert "walk stopped early" in text
