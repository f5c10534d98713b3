"""Edits in-process: an EditorSession behind the FakeEditor, no model (lich.runTool, lich.applyPatch).

What the session sends for an edit: positions in every negotiated encoding over non-ASCII lines
(the server's codec; the wire negotiation itself is tested in test_lsp_edits.py), CreateFile for
new files, the disk-write policy for closed files (with and without the save protocol), and the
rollback of the disk part when the editor rejects the edit part of one change set.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_harness import units, uri_of
from lsprotocol import types

NON_ASCII = "naïve 😀 日本 café"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
async def test_position_encodings_with_non_ascii_lines(
    editor, root: Path, client_name: str, encoding: str
) -> None:
    # A lone "\r" is a line break for LSP but not for hashline; the last line has no newline.
    text = f"{NON_ASCII}\nmid\rdle 😀\nlast {NON_ASCII} end"
    (root / "u.txt").write_text(text, encoding="utf-8")
    fake = await editor(client_name, encodings=[encoding])
    assert fake.position_encoding == encoding
    assert (await fake.command("lich.status", {}))["position_encoding"] == encoding
    uri = fake.open(root / "u.txt", text)
    result = await fake.command(
        "lich.runTool",
        {
            "name": "edit_file",
            "args": {"path": "u.txt", "old_string": "end", "new_string": "fin ✓"},
        },
    )
    assert result["ok"] is True, result
    expected = f"{NON_ASCII}\nmid\rdle 😀\nlast {NON_ASCII} fin ✓"
    assert fake.text(uri) == expected
    await fake.settle()  # the server's copy of the buffer follows the applied edit
    read = await fake.command("lich.read", {"uri": uri})
    assert read["rows"].endswith(f"|last {NON_ASCII} fin ✓")
    (applied,) = fake.applied
    edits = (
        applied.edit.document_changes[0].edits
        if applied.edit.document_changes
        else applied.edit.changes[uri]
    )
    (only,) = edits
    assert only.range.start == types.Position(line=3, character=0)  # LSP counts the "\r" break
    # The end of the last line (no newline), counted in the negotiated encoding's units.
    assert only.range.end == types.Position(
        line=3, character=units(f"last {NON_ASCII} end", encoding)
    )


async def test_new_files_use_create_file_when_supported(editor, root: Path) -> None:
    fake = await editor("visual-studio-code", save_documents=True)
    result = await fake.command(
        "lich.runTool",
        {"name": "write_file", "args": {"path": "new/made.txt", "content": "made\n"}},
    )
    assert result["ok"] is True, result
    (applied,) = fake.applied
    create, doc_edit = applied.edit.document_changes
    assert isinstance(create, types.CreateFile) and create.uri == uri_of(root / "new" / "made.txt")
    assert doc_edit.text_document.version is None
    # The editor saved it on request, so disk matches.
    assert fake.saved == [uri_of(root / "new" / "made.txt")]
    assert (root / "new" / "made.txt").read_text(encoding="utf-8") == "made\n"


@pytest.mark.parametrize(
    ("client_name", "policy", "save", "via_editor"),
    [
        ("visual-studio-code", "auto", False, False),
        ("visual-studio-code", "auto", True, True),
        ("visual-studio-code", "disk", True, False),
        ("neovim@v0.7.0", "editor", False, True),
        ("neovim@v0.7.0", "auto", False, False),
    ],
)
async def test_disk_write_policy_for_closed_files(
    editor, root: Path, client_name: str, policy: str, save: bool, via_editor: bool
) -> None:
    (root / "c.txt").write_text("old\n", encoding="utf-8")
    fake = await editor(
        client_name, init_options={"disk_write_policy": policy}, save_documents=save
    )
    result = await fake.command(
        "lich.runTool",
        {"name": "edit_file", "args": {"path": "c.txt", "old_string": "old", "new_string": "new"}},
    )
    assert result["ok"] is True, result
    assert len(fake.applied) == (1 if via_editor else 0)
    on_disk = (root / "c.txt").read_text(encoding="utf-8")
    if via_editor and not save:
        # The editor holds the change unsaved; the server's own reads already see it.
        assert on_disk == "old\n"
        read = await fake.command("lich.read", {"uri": uri_of(root / "c.txt")})
        assert read["rows"].endswith("|new")
        assert fake.text(uri_of(root / "c.txt")) == "new\n"
    else:
        assert on_disk == "new\n"


async def test_rejected_edit_rolls_back_the_disk_part(editor, root: Path) -> None:
    from lich_core.hashline.anchors import line_hash

    (root / "open.txt").write_text("o\n", encoding="utf-8")
    (root / "closed.txt").write_text("c\n", encoding="utf-8")
    fake = await editor("visual-studio-code")
    fake.open(root / "open.txt")
    fake.answer = "reject"
    # One patch over an open file (editor) and a closed one (disk, policy auto): all or nothing.
    patch = f"@@ open.txt\n= 1:{line_hash('o')}..1:{line_hash('o')}\n~O\n@@ closed.txt\n= 1:{line_hash('c')}..1:{line_hash('c')}\n~C\n"
    result = await fake.command("lich.applyPatch", {"patch": patch})
    assert result["ok"] is False and "edit_rejected: the user rejected the edit" in result["error"]
    assert len(fake.applied) == 1
    assert (root / "closed.txt").read_text(encoding="utf-8") == "c\n"
    assert (root / "open.txt").read_text(encoding="utf-8") == "o\n"
    assert fake.text(uri_of(root / "open.txt")) == "o\n"
    fake.answer = "apply"
    result = await fake.command("lich.applyPatch", {"patch": patch})
    assert result["ok"] is True, result
    assert (root / "closed.txt").read_text(encoding="utf-8") == "C\n"
    assert fake.text(uri_of(root / "open.txt")) == "O\n"
