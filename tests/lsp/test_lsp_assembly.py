"""How the LSP face is put together: the session builds each part with what it uses, and the
features add their commands to the command table that lich_lsp.commands owns (#34 item 1)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from lich_lsp.commands import COMMANDS, CommandTable

LSP_DIR = Path(__file__).resolve().parents[2] / "lich_lsp"
# The modules that may know the whole session: the session itself and the server that routes to it.
SESSION_HOLDERS = {"session.py", "server.py", "pygls_adapter.py"}


def session_mentions(source: str) -> list[int]:
    """Lines where a module names EditorSession (an import, an annotation, a call)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "EditorSession":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(
            alias.name == "EditorSession" for alias in node.names
        ):
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.strip() == "EditorSession"
        ):
            lines.append(node.lineno)  # a string annotation
    return lines


def test_the_finder_sees_a_part_that_takes_the_session() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from lich_lsp.session import EditorSession\n"
        "class Part:\n    def __init__(self, session: 'EditorSession') -> None: ...\n"
    )
    assert session_mentions(source) == [3, 5]


def test_no_part_of_the_lsp_face_is_built_with_the_whole_session() -> None:
    found = {
        path.name: lines
        for path in sorted(LSP_DIR.glob("*.py"))
        if path.name not in SESSION_HOLDERS
        and (lines := session_mentions(path.read_text(encoding="utf-8")))
    }
    assert found == {}, (
        f"these modules name EditorSession (give the part what it uses instead): {found}"
    )


async def test_every_command_the_server_announces_has_a_handler(editor: Any) -> None:
    fake = await editor()
    assert sorted(fake.session.commands.names()) == sorted(COMMANDS)


async def test_a_command_outside_the_public_list_cannot_be_added_and_an_unknown_one_is_refused() -> (
    None
):
    table = CommandTable(messages=None)  # type: ignore[arg-type]

    async def handler(args: tuple[Any, ...], request_id: Any) -> str:
        return "ran"

    with pytest.raises(ValueError, match=r"lich.nope is not one of lich's commands"):
        table.add("lich.nope", handler)
    table.add("lich.cancel", handler)
    with pytest.raises(ValueError, match="lich.cancel has a handler already"):
        table.add("lich.cancel", handler)
    assert await table.run("lich.cancel", ()) == "ran"
    with pytest.raises(JsonRpcInvalidParams, match="unknown command 'lich.status'"):
        await table.run("lich.status", ())
